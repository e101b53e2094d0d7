// Package ingest is delayq's first stage: it consumes the input topics
// (delay-input and the rate-limited delay-input-slow) in one consumer group,
// stores every task's payload (HBase, through Store) and its id (Redis,
// through Index), and only then commits the input offsets.
//
// # Goroutines
//
// Run joins the consumer group (kafka-go's ConsumerGroup, over both topics)
// and, for each generation, starts one goroutine per assigned partition of
// either topic (a lane) with its own partition reader, positioned at the
// generation's committed offset. The reader (package kafka/committed)
// reads read-committed: records of aborted transactions and transaction
// markers never reach the lane, and an open transaction holds back what
// follows it in its partition until it ends. A lane loops: fetch a batch (until
// BatchSize messages or BatchWait after the first one; a slow-topic lane
// takes a token from a bucket of SlowRate messages/s, shared by all slow
// lanes of the process, before each message), handle it, commit the offset
// after it with Generation.CommitOffsets, repeat. Batches of one partition
// are handled one at a time, in order; lanes run side by side and share
// Store, Index and Writer, which must be safe for concurrent use. The
// generation's function returns only after every lane has ended (kafka-go
// ends the generation when it returns). Run leaves the group after the last
// generation's lanes have committed, and returns after that.
//
// # Handling a batch
//
//   - every message is decoded with payload.Decode; one that breaks the wire
//     contract is written to the failed topic (delay-failed) with its original
//     key, value and headers plus a delay-error header giving the reason and
//     delay-source-topic/-partition/-offset headers saying where it came from;
//   - the valid tasks go to Store.Put, then (when the Store keeps id rows,
//     see "Ops by id") through the id-row protocol, then the non-cancel ones
//     to Index.Add. Cancels by due time are stored (as a marker) and never
//     indexed;
//   - an outage (any error but a refusal, see Store and Index) is transient:
//     the call is retried through internal/retry's Stage "ingest" (capped
//     exponential backoff, each attempt bounded by CallTimeout) for as long
//     as it takes, the lane stalls with its offset uncommitted, and it
//     resumes by itself when the dependency answers. The stall shows as one
//     WARN line, one INFO line on recovery, delayq_stage_stalled and
//     delayq_stage_retries_total{stage="ingest"};
//   - a refusal for good (payload.ErrContract from the Store, zset.ErrBadEntry
//     from the Index) of a call of several tasks is narrowed down by halves
//     to the tasks that cause it; each of those goes to the failed topic
//     alone, with the refusal as delay-error, and the rest are stored;
//   - the failed-topic write is retried the same way: every error of it is
//     an outage, so the batch stays uncommitted until it is written;
//   - with Config.Replicas (delayd's --redis-min-replicas), the batch is
//     committed only once WAIT saw its Redis writes on the replicas of
//     every master, and handled again when a master was replaced
//     meanwhile (replicas.go); a replica down stalls the lane like any
//     outage (op "wait");
//   - a panic while handling a batch (a bug) is recovered: the batch is
//     handled again in halves down to the message that panics alone, which
//     goes to the failed topic with delay-error "internal error" and an
//     ERROR line naming its topic, partition and offset (panic.go).
//
// # Ops by id (lifecycle.go)
//
// Every task name has an id row beside its task rows (payload.IDRowKey)
// holding its current due time, and ingest accepts cancel by id alone and
// reschedule. The rules are package taskstate's (its doc: the id row, the
// order, the rules for unknown ids); ingest carries its plans out, per
// batch after the task rows are stored, with every call retried through
// the stage:
//
//  1. write: the ops' ids are flagged in Redis (Index.FlagOps:
//     {prefix}:op:{id}, kept MaxDelay + Retention, saturating), then every
//     message writes its cell to its id row (Store.PutIDs);
//  2. read back the id rows of every op, and of every submit whose id is
//     flagged (Index.Flagged, Store.GetIDs); taskstate.Decide (its Config:
//     RescheduleGrace, and CancelBlock = MaxDelay + Retention, how long a
//     cancel by id alone blocks its id: a submit recorded after it in that
//     time is refused, "id cancelled", with the end; for a batch of Input
//     with Marks set, HoldLead and MaxHold = the scanner's hold, so a
//     reschedule recorded 2 s or more before its task's due time moves
//     the task though read after it: the hold kept the task);
//  3. read the stored rows a move copies (Store.Get), Plan.Settle; put the
//     copies, index, put the cancel markers, write the id rows' new due
//     times, in that order, so that a crash at any point is completed by
//     handling the batch again;
//  4. forget (Index.Forget) the index entries of every row the batch
//     marked: its cancels by id and due time and the plan's markers
//     (moved, replaced, cancelled rows), so the backlog
//     (delayq_pending_tasks, delayctl backlog, the console) counts only
//     tasks still to deliver. It runs after the markers are stored, so an
//     entry forgotten is one the scanner would drop, and a crash before it
//     is completed by the re-read. A cancel by id and due time also flags
//     its id (after its marker is stored), so a later submit of the id
//     reads its id row and, once indexed, its task row, and forgets its
//     own entry when the row is marked: a cancel handled before its task
//     works too. Left: a cancel whose flag comes after the submit read
//     the flags and whose forget comes before the submit indexes (two
//     batches in flight within milliseconds) leaves that entry counted
//     until it falls due and the scanner drops it.
//
// An outage of HBase or Redis in any step stalls the lane (retried
// through the stage) and never makes an id "unknown".
//
// # Invariants
//
//   - Offsets are committed only after Store and Index both hold every valid
//     task of the batch, or the failed topic holds it. A crash anywhere means
//     the batch is read again: at least once, never lost.
//   - A valid task or a cancel never goes to the failed topic because a
//     dependency was down; only a message that can never succeed does, and
//     each message meets its own fate, whatever its neighbours in the batch.
//   - Commits go through the generation that fetched the batch: once that
//     generation is over the coordinator refuses them, so a commit can never
//     land on a later generation and move an offset backwards. Within a
//     partition, batches are committed in fetch order, one at a time.
//   - Re-delivery writes the same (ID, ExecAt) again: the same row and the same
//     zset member, one task.
//   - Graceful stop and rebalance: when Run's ctx is cancelled or the
//     generation ends, the lanes stop fetching, finish the batch in hand
//     under a context that outlives the stop by DrainTimeout (below the
//     group session timeout, so before another member can own the
//     partition) and commit it; then the generation ends and, on a stop,
//     Run leaves the group. So the next owner starts exactly after what was
//     stored: no duplicates. A batch that could not be finished in time
//     (an outage) stays uncommitted and is read again; on a stop Run
//     reports it as an error.
//   - Failed-topic messages never grow past what the writer takes: one too
//     large loses its value (then its key and headers), noted in delay-error.
//   - Fenced writes (fence.go): every write of a lane (Store.Put, PutIDs,
//     Index.Add, FlagOps, the failed topic, the commit) checks the lease of
//     its generation right before it (consumer.Fence, run next to the lanes
//     for each generation). An ingester paused past its session (a long
//     GC, a frozen VM, SIGSTOP) wakes with the lease lapsed, waits for the
//     coordinator's answer, which revokes it, and writes nothing of the
//     batch in hand: the partition's new owner reads that batch again, and
//     later ops by id the new owner applied are not undone by stale writes.
//     A revoked lease ends the generation. A fenced write is not retried.
package ingest

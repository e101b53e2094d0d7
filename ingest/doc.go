// Package ingest is delayq's first stage: it consumes the input topics
// (delay-input and the rate-limited delay-input-slow) in one consumer group,
// stores every task's payload (HBase, through Store) and its id (Redis,
// through Index), and only then commits the input offsets.
//
// # Goroutines
//
// Run starts one goroutine per input topic, each with its own kafka-go Reader
// (GroupID + Topic) and loops: fetch a batch with FetchMessage (until
// BatchSize messages or BatchWait after the first one; the slow topic waits
// on a token bucket of SlowRate messages/s before each fetch), handle it,
// commit it with CommitMessages, repeat. Batches of one topic are handled one
// at a time, in order; the two topics run side by side and share Store, Index
// and Writer, which must be safe for concurrent use. Run closes the readers
// (leaving the group) only after both goroutines have ended, so that one
// lane leaving cannot end the generation under the other's final commit,
// and returns after that.
//
// # Handling a batch
//
//   - every message is decoded with payload.Decode; one that breaks the wire
//     contract is written to the failed topic (delay-failed) with its original
//     key, value and headers plus a delay-error header giving the reason and
//     delay-source-topic/-partition/-offset headers saying where it came from;
//   - the valid tasks go to Store.Put, then the non-cancel ones to Index.Add,
//     each call retried with exponential backoff (Retries attempts, each bounded
//     by CallTimeout). Cancels are stored (as a marker) and never indexed;
//   - if Put or Add still fails, the batch's tasks go to the failed topic with
//     the error as delay-error: never dropped, and bad storage never stalls the
//     partition forever;
//   - if even the failed topic cannot be written, nothing is committed and the
//     whole batch is handled again after a backoff (puts and adds are
//     idempotent, so repeating them is harmless).
//
// # Invariants
//
//   - Offsets are committed only after Store and Index both hold every valid
//     task of the batch, or the failed topic holds it. A crash anywhere means
//     the batch is read again: at least once, never lost.
//   - Within a topic, batches are committed in fetch order, one at a time, so
//     CommitMessages never moves an offset backwards.
//   - Re-delivery writes the same (ID, ExecAt) again: the same row and the same
//     zset member, one task.
//   - Graceful stop: when Run's ctx is cancelled the loops stop fetching, finish
//     the batch in hand under a fresh context bounded by StopTimeout and commit
//     it; then Run closes the readers and returns. A cancelled ctx is not an
//     error; a batch that could not be finished in StopTimeout is (it stays
//     uncommitted and is read again).
//   - Failed-topic messages never grow past what the writer takes: one too
//     large loses its value (then its key and headers), noted in delay-error.
package ingest

// Package scanner is the last stage of delayq: it consumes scan tasks from
// the delay-scan topic and delivers the tasks they point at to their
// business topics. See docs/ARCHITECTURE.md for where it sits in the flow.
//
// Words: a scan task is a delay-scan message (scantask.Task: a zset, the
// further zsets of its group, and an upper bound until); an entry is a
// zset member (id, exec_at); a task is a stored payload (payload.Task); a
// delivery is a task's message on its way out.
//
// A group task (zset.Reader.DueGroups: the due zsets of a segment's shard
// families that share a family-0 shard) is scanned zset by zset as if each
// had a scan task of its own; its offset finishes with the last of them.
//
// # Rules and I/O
//
// The decisions of a step and of a release round (what to take from a
// zset, when to wake, when a step may write, what a paused or rate-limited
// topic holds, what the releaser lets out, in which order and at which
// rate) are the pure rules of package schedule, with a model test; this
// package performs them. worker.go runs a worker's loop and its steps,
// load.go and get.go read rows into deliveries (isolating panics),
// recur.go plans next occurrences, control.go holds, deliver.go writes,
// park.go writes alone what a batch write refused, release.go releases
// held tasks.
//
// # Steps
//
// Scanning a scan task is a loop of steps. A step reads up to BatchSize
// entries up to until (ZRANGEBYSCORE -inf until LIMIT), takes the ones
// due by now, or by its wake + Prefetch when the zset was woken for its
// next entry (always within the Hold's cutoff: a prefix, lowest score
// first), loads their tasks from the store
// in one Get (load.go), waits until the latest of them is due and produces
// the messages, one WriteMessages call per topic (deliver.go); then it
// settles the entries it is done with (delivered, cancelled, missing, or
// sent to the failed topic). When the next entry is not due yet the scan
// task waits until that entry's exec_at, rounded up to a multiple of
// Coalesce so that the zsets of a worker share steps, less Prefetch (at
// most Coalesce: the store's answer time is then not lateness, and a
// step's wait never overlaps the worker's next wake); when nothing up to
// until is left, it is done. Between reads a scan task keeps the entries
// it read, so a wake
// costs one store Get and one write and no Redis call; settled entries are
// removed before the zset is read again, before the scan task is done, and
// on stop. The zsets stepped together are read together and removed from
// together: one pipelined round trip each (zset.Reader.DueMany,
// RemoveMany), however many zsets a dense segment spreads over.
//
// A write that fails for some of its messages, or for a reason of their
// own, parks them (park.go): the worker writes each again alone, one
// message per produce request, off the step's critical path, and judges it
// by that answer alone; kafka-go gives every message of a partition batch
// the batch's error. A write that fails for all its messages for a reason
// that is not theirs (brokers unreachable) is an outage: the stage stalls.
//
// # Goroutines
//
// Run joins the consumer group (GroupID, default "delayq-scanner"; timing
// and partition watching from kafka/consumer) through kafka-go's
// Generation API. For each generation it starts one goroutine with
// Generation.Start; that goroutine runs, per assigned partition, a fetch
// loop on a partition Reader positioned at the generation's offset and a
// pool of Workers goroutines, and commits offsets every CommitInterval. A
// scan task goes to worker hash(zset) % Workers (its first zset, the
// group's name), so inside a partition one zset is only ever scanned by
// one goroutine; the Kafka key is that zset,
// and a partition skips the scan tasks of zsets that the topic's current
// partition count sends elsewhere (after the topic grew), so across the
// group one zset is scanned by one partition. A worker holds the scan
// tasks of each of its zsets in offset order and runs one zset's tasks one
// after the other; zsets that wait for their next entry sit in a timer
// heap and parked deliveries in another, so a waiting zset or a refused
// message never delays another zset. A worker writes its parked
// deliveries, and a drain removes settled entries, from short-lived
// goroutines it waits for. With Config.Controls, Run also runs the
// releaser (release.go): every 50 ms it delivers the held tasks of the
// topics that are not paused and that this instance leases, at their
// rates. Run returns only after every goroutine it started has ended.
//
// # Invariants
//
//   - Nothing is delivered before its exec_at: a step that took entries
//     due within Prefetch writes them once the latest is due (waitDue).
//     A cancel stored between the step's load and that write (sent less
//     than the Hold's lead before the task is due: no promise covers it)
//     does not stop the delivery.
//   - Nothing is removed from the index before it was produced: an entry
//     leaves its zset only after the write of its message succeeded, or
//     after the store showed it cancelled or missing, or after it was
//     produced to FailedTopic because its business topic refused it for
//     good. A crash (kill -9) delivers again what was produced and not yet
//     removed: at least once.
//   - An outage is never a refusal. Errors of Redis, the store and Kafka
//     are retried with capped backoff for as long as the context lives,
//     through one internal/retry Stage ("scanner": one WARN line when it
//     stalls, one INFO line when it recovers). Only an answer about one
//     message alone (too large, an invalid or unauthorized topic, a topic
//     still unknown after MaxAttempts alone writes, each "unknown topic"
//     confirmed by the brokers: delayq's writers create no topics) sends it
//     to FailedTopic with a delay-error header. A parked entry stays in its
//     zset until its delivery settles; later reads skip it.
//   - A panic while handling one task (reading its row, building its
//     message, planning its next occurrence) is recovered: the task goes
//     to FailedTopic with delay-error "internal error" and an ERROR line
//     naming it (get.go); the worker goes on.
//   - Offsets are committed through a sliding window (consumer.Window):
//     the committed offset is the low-water mark of finished scan tasks
//     and never goes backwards. A scan task that was not finished (stop,
//     rebalance) is read again by the next owner; scanning it again is
//     harmless because a scan removes only what it read and produced.
//   - A stop (Run's ctx cancelled) or a rebalance ends fetching at once;
//     queued scan tasks and those waiting for their next entry are left
//     for the next owner. A step in flight goes on for two thirds of
//     DrainTimeout (a write already started a sixth more), then every
//     worker removes what its zsets settled, one pipelined call per zset,
//     concurrently, within the last third; then the offsets are committed
//     and the member leaves or rejoins. kafka-go stops heartbeating when a
//     generation ends, so DrainTimeout plus the final commit fit in the
//     session (consumer.MaxDrain): no other member can take the partitions
//     and scan a zset whose produced entries are still being removed. That
//     is what makes a graceful stop free of duplicates.
//   - A recurring task's next occurrence is stored, indexed and recorded in
//     its id row (recur.go) before the current one is produced, so before
//     its entry is removed: a crash leaves no gap in a series, and planning
//     an occurrence again writes the same (id, exec_at), one task.
//   - A due task of a paused or rate-limited topic (Config.Controls) is
//     held (control.go): it leaves its zset only after the topic's held
//     set has it, and its held entry only after it was produced, lowest
//     exec_at first. The releaser goes no further than the earliest entry
//     due in the last 5 s still in the index (release.go's fence): a task
//     due earlier on its way through another step, of any instance, is
//     held before the later ones go out. A task later than its delay-expire-after (or its
//     topic's default) goes to FailedTopic with delay-error "expired".
//   - A due entry without a row is logged at WARN with its id and due time
//     (rate-limited), counted in delayq_tasks_missing_total and removed.
//   - Fenced writes (fence.go): every produce, remove, hold and write of a
//     next occurrence checks, right before it, the fence of its context:
//     a worker's is its generation's lease (consumer.Fence, one goroutine
//     per generation), the releaser's its topic lease, renewed while a
//     round runs (a round may outlast the lease's 2 s TTL) and revoked
//     once it lapsed or passed to another instance. A scanner paused past its session wakes
//     holding entries it read before the pause; its lease has lapsed, it
//     waits for the coordinator's answer, which revokes it, and it
//     produces and removes nothing more for the generation, which ends.
//     The next owner delivers those entries. A write that was in flight
//     during the pause is not stopped (at least once).
package scanner

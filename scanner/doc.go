// Package scanner is the last stage of delayq: it consumes scan tasks from the
// delay-scan topic and delivers the tasks they point at to their business
// topics.
//
// A scan task (scantask.Task) names one Redis zset and an upper bound
// `until`, which the dispatcher sets one tick ahead of its tick. Scanning it
// is a loop of steps: read up to BatchSize entries up to until
// (ZRANGEBYSCORE -inf until LIMIT); of those, take the ones already due
// (score <= now: a prefix, since they come lowest score first), fetch their
// payloads from the store in one batch, produce the deliverable ones in one
// WriteMessages call, then remove exactly those entries (delivered,
// cancelled, missing or routed to the failed topic); repeat while full
// batches are due. When the next entry up to until is not due yet, the step
// ends and the task waits until that entry's exec_at, rounded up to a
// multiple of Coalesce (50 ms by default, so that the zsets of a worker
// share steps); when no entry up to until is left, the task is done. A task
// is therefore never delivered before its exec_at, and one whose scan task
// came ahead of time is late by the rounding and the time a step takes.
//
// Between reads of its zset a scan task keeps the entries it read and not
// yet delivered, so a wake costs one store Get and one write and no Redis
// call; the entries it delivered are removed (one ZREM) before the zset is
// read again, before the task is done, and on stop.
//
// # Goroutines
//
// Run joins the consumer group (GroupID, default "delayq-scanner") through
// kafka-go's ConsumerGroup / Generation API. For each generation it starts one
// goroutine with Generation.Start; that goroutine runs, per assigned partition,
// a fetch loop on a partition Reader positioned at the generation's offset and
// a pool of Workers goroutines, and commits offsets every CommitInterval. A scan
// task goes to worker hash(zset) % Workers, so inside a partition one zset is
// only ever scanned by one goroutine (the Kafka key is the zset, so across the
// group it is scanned by one partition). A worker holds the scan tasks of each
// of its zsets in offset order and runs one zset's tasks one after the other.
// Zsets that wait for their next entry sit in a timer heap, so a waiting
// zset never delays another, and the worker steps all its zsets that are due
// together: one store Get and one write for all their due entries.
// Run returns only after every goroutine it started has ended.
//
// # Invariants
//
//   - Nothing is delivered before its exec_at: a step takes only entries with
//     score <= now.
//   - Nothing is removed from the index before it was produced: an entry leaves
//     its zset only after the write of its message succeeded, or after the
//     store showed it cancelled or missing, or after it was produced to the
//     failed topic (FailedTopic) because its business topic refused it for good.
//     Removal waits for the task's next read of its zset, its end or a stop,
//     so a crash (kill -9) delivers again what a running scan task produced
//     since its last read: at least once, as after any crash.
//   - Offsets are committed through a sliding window (consumer.Window): the
//     committed offset is the low-water mark of finished scan tasks and never
//     goes backwards. A task that was not finished (stop, rebalance) is read
//     again by the next owner; scanning it again is harmless because a scan
//     removes only what it read and produced.
//   - Stop (Run's ctx cancelled) and rebalance: fetching stops at once, queued
//     scan tasks that have not started and scan tasks waiting for their next
//     entry are left for the next owner (their offsets stay unfinished), a
//     step in flight continues for up to DrainTimeout. After that deadline no new
//     batch and no new write starts, but a write already started is never cut
//     short (kafka-go keeps producing a batch after WriteMessages returned
//     ctx.Err(), so its outcome would be unknown) and a batch whose messages
//     were produced always gets its entries removed, each with a short grace,
//     held scan tasks included.
//     Then the offsets are committed and, on stop, the member leaves the
//     group. That is what makes a graceful stop free of duplicates.
//   - Errors of Redis, the store and Kafka are retried with exponential backoff
//     while the context lives. A message that a business topic refuses for good
//     (invalid or unauthorized topic, too large, a topic that stays unknown for
//     MaxAttempts writes) goes to FailedTopic with a delay-error header so that
//     one bad task never blocks its zset.
package scanner

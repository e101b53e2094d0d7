// Package scanner is the last stage of delayq: it consumes scan tasks from the
// delay-scan topic and delivers the tasks they point at to their business
// topics.
//
// A scan task (dispatcher.ScanTask) names one Redis zset and an upper bound
// `until`. Scanning it is a loop: read up to BatchSize due entries
// (ZRANGEBYSCORE -inf until LIMIT), fetch their payloads from the store in one
// batch, produce the deliverable ones in one WriteMessages call, then remove
// exactly the entries that were read (delivered, cancelled, missing or routed
// to the failed topic); repeat until a batch comes back short.
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
// group it is scanned by one partition). Run returns only after every
// goroutine it started has ended.
//
// # Invariants
//
//   - Nothing is removed from the index before it was produced: an entry leaves
//     its zset only after the write of its message succeeded, or after the
//     store showed it cancelled or missing, or after it was produced to the
//     failed topic (FailedTopic) because its business topic refused it for good.
//   - Offsets are committed through a sliding window (dqkafka.Window): the
//     committed offset is the low-water mark of finished scan tasks and never
//     goes backwards. A task that was not finished (stop, rebalance) is read
//     again by the next owner; scanning it again is harmless because a scan
//     removes only what it read and produced.
//   - Stop (Run's ctx cancelled) and rebalance: fetching stops at once, queued
//     scan tasks that have not started are left for the next owner, scan tasks
//     in flight continue for up to DrainTimeout. After that deadline no new
//     batch and no new write starts, but a write already started is never cut
//     short (kafka-go keeps producing a batch after WriteMessages returned
//     ctx.Err(), so its outcome would be unknown) and a batch whose messages
//     were produced always gets its entries removed, each with a short grace.
//     Then the offsets are committed and, on stop, the member leaves the
//     group. That is what makes a graceful stop free of duplicates.
//   - Errors of Redis, the store and Kafka are retried with exponential backoff
//     while the context lives. A message that a business topic refuses for good
//     (invalid or unauthorized topic, too large, a topic that stays unknown for
//     MaxAttempts writes) goes to FailedTopic with a delay-error header so that
//     one bad task never blocks its zset.
package scanner

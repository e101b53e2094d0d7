// Package backfill delivers stored tasks again: it scans the payload store
// by due time (every salt of the HBase table, merged in (exec_at, id)
// order) and writes each task's output message (payload.Deliverable, stamped
// with the current time) to its business topic. It repairs a lost or wiped
// Redis index, or replays a window of deliveries.
//
// Rows are handled in batches: skip the cancelled ones and, with a topic
// filter, those for other topics; with SkipPending, ask the Redis index
// whether each task is still pending (the scanner will deliver it, so a
// backfill must not) — a batch's checks run concurrently; then write the
// batch with one WriteMessages call and report progress.
//
// # Invariants
//
//   - Every row the scan hands over is counted exactly once in Stats:
//     delivered, or skipped as pending, cancelled, other topic or invalid.
//   - Delivery is at least once. When ctx ends (SIGINT), Run stops the scan,
//     still writes the batch in hand (bounded by FlushTimeout) and returns
//     the Stats with Resume: every row due before Resume is handled, so a
//     rerun from Resume misses nothing and repeats at most the rows due at
//     that one millisecond. Consumers de-duplicate by delay-id and delay-at.
//   - A dry run writes nothing but counts (and, with SkipPending, checks)
//     as a real run would.
//
// Run runs on the caller's goroutine; the pending checks of a batch use up
// to Config.Checkers goroutines that end before the batch is written.
package backfill

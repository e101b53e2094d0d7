// Package rangescan is the pipeline delayctl backfill and repair (and the
// automatic repair) share: read the task rows due in [From, To) from the
// payload store in (exec_at, id) order, gather the ones a caller keeps
// into batches of BatchSize, hand each batch to the caller's flush, and
// keep the position a rerun resumes from.
//
// What a batch means (deliver it again, index it again) is the caller's;
// the pipeline owns the scan, the batching, the progress calls, the
// resume position and what happens when the scan stops early. Ask checks
// every item of a batch concurrently, a bounded number at a time.
//
// # Invariants
//
//   - Resume advances past a batch only once its flush succeeded: to the
//     due time of the batch's last row, whose millisecond a rerun repeats
//     since more rows may share it. After a complete run it is To. So a
//     rerun from Resume misses nothing.
//   - With Drain > 0 the batch in hand is still flushed when the scan stops
//     early (ctx ended: under a fresh deadline of Drain; the store failed:
//     under ctx); with Drain 0 it is left for the rerun.
//
// # Goroutines
//
// Run runs on the caller's goroutine; Ask starts up to its limit of
// goroutines and returns after every one has ended.
package rangescan

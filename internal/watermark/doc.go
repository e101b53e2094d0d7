// Package watermark keeps a cancel from losing the race against its own
// task when ingest falls behind: after an outage, a crash or a rebalance the
// scanner must not deliver an overdue task while the cancel sent before it
// is still queued in delay-input behind a stalled partition.
//
// Ingest publishes, per partition of delay-input (and of delay-input-slow,
// which only package repair reads), a watermark W: a time (on
// delayd's clock, unix ms) such that every message appended to the
// partition before W is stored (its batch committed). A Tracker computes it
// from the partition's committed offset and periodic samples of its log
// end offset: once the committed offset reaches the end offset sampled at
// c, W = c. A lane that has waited for input for IdleProof also gets
// W = now − IdleProof, which covers a log that ends in transaction markers
// no message will ever follow.
//
// The scanner reads the watermarks of all partitions (Follower) and
// delivers an entry only when its exec_at ≤ min(W) + Lead. While ingest
// keeps up, min(W) trails now by a batch or two and Lead (default 2 s) hides
// it: nothing is held. When a partition stalls its W stops, and deliveries
// stop Lead after it; they resume when ingest has caught up with what was
// queued. The guarantee: a cancel appended to delay-input at least Lead
// before its task's due time wins over any outage or crash of delayd, Redis
// or HBase shorter than MaxHold. A partition whose watermark is more than
// MaxHold behind (no ingest running, a stalled partition that never comes
// back) stops holding: it is ignored, with one WARN line, so deliveries go
// on. Cancels sent to delay-input-slow are not covered (the Go client sends
// every cancel to delay-input).
//
// Metrics (Follower):
//
//	delayq_ingest_watermark_lag_seconds  now − min(W) over the partitions that hold
//	delayq_delivery_held                 1 while deliveries are held back
package watermark

// Package retry is delayq's one retry helper: capped exponential backoff
// with jitter, and the stall-and-retry rule of every stage.
//
// The rule (docs/ARCHITECTURE.md, "Guarantees"): a dependency that is down,
// slow, loading or failing over is transient. The stage that needs it
// stalls and calls again, with backoff capped at a few seconds, for as long
// as its context lives; it never turns an outage into a failed message.
// Only an error the caller classifies as permanent (Policy.Permanent) ends
// the retries early.
//
// A Stage makes a stall visible without flooding the log: one WARN line
// when the first of its calls starts failing, one INFO line when the last
// failing call succeeds again, and the metrics
//
//	delayq_stage_stalled{stage}              1 while any call of the stage retries
//	delayq_stage_stall_seconds_total{stage}  time spent stalled
//	delayq_stage_retries_total{stage,op}     failed calls that were retried
//
// A Stage is safe for concurrent use: many goroutines (scanner workers,
// ingest lanes) retry through one Stage and it counts them as one stall.
// A nil *Stage retries without logs or metrics.
package retry

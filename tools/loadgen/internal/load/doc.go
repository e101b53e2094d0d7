// Package load drives a running delayd from the outside and measures it:
// the logic of the loadgen command (tools/loadgen).
//
// A delayq run produces Config.Tasks input messages to delay-input (at a
// target rate or as fast as the producer goes), each due uniformly over
// [MinDelay, MinDelay+Span) from its submission or, in burst mode, all in
// one second BurstAfter from the start. It reads the business topic from
// the start with one partition reader per partition and judges every
// delivered message against what was submitted (Tally): delivered, lost,
// duplicates, early (record timestamp before its delay-at), lateness
// (record timestamp minus delay-at).
//
// Besides Kafka it reads three things: delayd's /metrics (the accepted and
// delivered counters and process_cpu_seconds_total), Redis INFO (memory:
// used_memory; cpu and commandstats: Redis's CPU time and its time per
// command, before the run, once everything is accepted and at the end) and
// the zsets under the delayd's Redis prefix (pending count and encodings). Submit rate is Tasks over the time from the first
// produce until delayq_tasks_accepted_total has grown by Tasks: ingest lag
// back to zero, everything stored in HBase and Redis. Redis bytes per
// pending task is the used_memory growth from before the run to that moment
// over the members the prefix's zsets hold then.
//
// A baseline run (Config.Baseline) measures the same machine moving the
// same messages through a plain kafka-go consumer-group reader and writer,
// topic to topic: once while the input is being produced (the ratio for the
// submit rate) and once from a backlog (the ratio for the delivery rate).
// It runs first, in the same process, so the ratios come from one run.
//
// # Goroutines
//
// Run starts the producers, one reader per partition of every topic it
// reads, and a progress ticker; all of them end before Run returns.
// Progress lines go to Config.Progress (stderr in the command) once a
// second.
package load

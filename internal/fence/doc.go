// Package fence keeps a process that was paused (a long garbage
// collection, a frozen VM, SIGSTOP) from writing for work it no longer
// holds. A paused process does not know it was paused: when it wakes, its
// Kafka session, lock or lease may have passed to another instance, and
// every write it had in mind would duplicate that instance's work or undo
// what came after.
//
// A Fence is checked at the write, right before it: Check returns nil
// while the holder may write and an error wrapping ErrFenced once it may
// not. Two kinds:
//
//   - Until is valid before an instant of the monotonic clock: the expiry
//     of a lock or lease measured from before it was asked for, so a pause
//     anywhere after that only brings the expiry nearer.
//   - Lease is renewed by its holder (kafka/consumer.Fence renews one from
//     the group coordinator's answers to heartbeats) and revoked when the
//     holder learns it lost the work; Check waits while it is lapsed and
//     not yet revoked (a pause, or a coordinator that does not answer), so
//     a lapse is a stall, not a refusal.
//
// With attaches a Fence to a context and Check(ctx) checks it, so a stage
// can wrap its writers once and fence every write made for one
// generation's work; a context without a Fence is not fenced.
//
// What ingest and the scanner share: Keep runs a generation's Lease
// (renewed by kafka/consumer.Fence) and gives the context its writes are
// made in; Counter checks a write and counts a refusal in
// delayq_fenced_writes_total{stage,write}; WrapStore fences the payload
// store's writes; Refused tells a refusal from an outage, for retry
// policies.
//
// # Invariants
//
// A fence cannot reach into the write itself: a write that passed its
// check before the pause and was in flight during it (a produce waiting
// for its acks) lands when the process wakes. Kafka cannot check a Redis
// token, nor Redis a Kafka generation, so that window stays; fences make
// it as short as one call.
//
// # Goroutines
//
// Keep runs the renewal on one goroutine until its stop, which waits for
// it; nothing else starts any.
package fence

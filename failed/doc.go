// Package failed reads the delay-failed topic and replays its messages:
// it turns each failed message back into an input message once an operator
// fixed what made it fail. delayctl replay and the console use it.
//
// # What lands in delay-failed
//
// Two stages write there, with the reason in delay-error:
//
//   - ingest, for an input message it cannot accept: the original key,
//     value, headers and timestamp, plus delay-source-topic,
//     delay-source-partition and delay-source-offset (where it read the
//     message) as its last three headers. The message may carry no
//     delay-id; its task name was then derived from that input position
//     (payload.DerivedName).
//   - the scanner, for a stored task its business topic refused for good:
//     the output message (with delay-id and delay-at) plus delay-topic,
//     stamped when it was refused. It has no delay-source-* headers.
//
// When a failed message is too large for the failed topic, ingest drops
// its value (then its key and headers) and the scanner its key, value and
// pass-through headers, and delay-error says so. Such a message is listed
// (Record.Dropped) but never replayed: it would deliver something else.
//
// # Reading by time
//
// Scan reads the records stamped in a time range. For every partition it
// asks the broker for the first offset stamped at or after From and the
// first stamped at or after To+Slack (ListOffsets by timestamp), capped at
// the high-water mark at the start, and reads the offsets in between; it
// never waits for records written later. Record timestamps come from
// producers' clocks (ingest keeps the input's), so a partition is only
// nearly in time order: the Slack (1 minute) catches records stamped
// inside the range but written after a later one. Only records stamped in
// [From, To) and passing the reason and topic filters are handed on.
// Partitions are read one after the other, each in offset order, with one
// kafka-go reader at a time; nothing runs after Scan returns.
//
// # Replay
//
// Record.Replay is the transformation; Replay and Resubmit write its
// result. The replayed message is the input as the producer wrote it:
// key, value, timestamp and headers, minus delay-error and the
// delay-source-* headers. Choices, and why:
//
//   - Destination: the input topic, or the slow input topic when ingest
//     had read the message from there, so a replay keeps the producer's
//     lane. A scanner refusal goes to the input topic.
//   - Task identity: a message without delay-id (and without delay-op) gets
//     the name ingest derived for it, its first input position; without a
//     position (not written by ingest) it gets the failed message's
//     position. So the replayed task is the same task (same id) as whatever
//     of the original was stored, and replaying it twice, by overlapping
//     ranges or a rerun, is one task as long as it is pending. The
//     timestamp is kept so that a delay-after resolves to the same due
//     time (same id and due time is one task). A scanner refusal carries
//     the task's delay-id, delay-at and delay-topic, so replaying it
//     resubmits the same task; its due time is past, and a past due time
//     is delivered at once.
//   - Traceability: delay-replay-of names the failed message
//     (delay-failed/<partition>/<offset>) and delay-replay-source the input
//     position ingest read it from, in the replayed input message. They
//     are provenance (payload.Provenance): ingest drops them from input
//     like a producer's, so they reach neither the stored task nor the
//     business topic nor a later failed message; the chain is followed
//     through the topics (the replayed message names its failed message,
//     which names its input position). A message that fails again after a
//     replay keeps the delay-id the first replay gave it, so the next
//     replay is still the same task.
//   - Trust: only what delayq wrote names a task. Input cannot carry
//     provenance headers, and ingest writes delay-source-* as the failed
//     message's last three headers, so Parse reads them only there; a
//     delay-replay-source in a failed message is never read.
//
// # Invariants
//
// Replay never writes a record it did not match, never writes a record
// whose contents were dropped, and writes the records of one failed
// partition in their order. A delivered task is not remembered: replaying
// it again delivers it again, with the same delay-id and delay-at, which
// is what business consumers de-duplicate on.
package failed

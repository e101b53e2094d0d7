// Package consumer holds the consumer-group side of delayq's Kafka
// plumbing: the group preset for stages on the Generation API (NewGroup,
// Generations), the partition reader preset (Partition), a consumer-group
// reader preset (NewReader), the group timing every group shares
// (HeartbeatInterval, SessionTimeout, JoinBackoff, PartitionWatchInterval,
// MaxDrain), Window, the sliding-window offset committer, and Fence, a
// generation's lease for fencing writes.
//
// # Timing
//
// The coordinator declares a member dead SessionTimeout after its last
// heartbeat: after a kill -9 its partitions move about that long later.
// kafka-go stops heartbeating as soon as a generation ends, while the
// member still drains, so a stage's drain, final commit and leave or
// rejoin must fit in MaxDrain; a member that drains longer loses its
// partitions to another member while it still works on them. Every group
// watches the partition count of its topics and rebalances when it grows.
//
// # Fence
//
// Fence keeps a generation's lease (internal/fence.Lease) for the writes a
// stage makes for that generation's partitions: it heartbeats the member
// itself once per HeartbeatInterval (kafka-go's heartbeats are not
// observable), renews the lease for SessionTimeout − FenceMargin from each
// heartbeat's send on every answer that keeps the member (none, or
// REBALANCE_IN_PROGRESS), and revokes it when the coordinator no longer
// counts the member. A process paused past its session wakes with the
// lease lapsed and its writes waiting, and the first answer revokes it.
// Its heartbeats also keep the member's session while a stage drains
// after kafka-go ended the generation (MaxDrain still bounds the drain).
// kafka-go v0.4.51 misdecodes heartbeat answers (heartbeatError).
//
// # Readers
//
// delayq's stages do not use a consumer-group reader: they join their
// group with NewGroup and, per assigned partition of a generation, read
// with a partition reader, committing through the generation. Every
// partition reader of delayq is built from one preset, Partition, with
// the same fetch settings (MinBytes 1, MaxBytes DefaultMaxBytes, MaxWait
// DefaultMaxWait) unless its caller says why not: NewCommittedReader reads
// read-committed (package kafka/committed: ingest's lanes, on the input
// topics that producers may write in transactions), NewPartitionReader
// with kafka-go's Reader (the scanner's partitions of delay-scan, the
// failed-topic replay).
//
// A consumer-group Reader's CommitMessages commits exactly the offsets
// given and, after a rebalance, may land on the next generation and move
// an offset backwards. NewReader, with the group timing above and the
// same fetch defaults, serves tests and tools that read a topic as a
// group; use FetchMessage and commit explicitly there too (ReadMessage
// with CommitInterval 0 commits after every message, a broker round trip
// each).
//
// # Window
//
// A Window tracks the offsets of one partition that were handed out
// (Start, in increasing order) and finished (Done, in any order) and
// reports the low-water mark: the offset after the longest finished prefix,
// which is the offset to commit. Invariants: the commit offset never goes
// backwards, never passes an unfinished offset, and gaps in the offsets
// (compacted records, transaction markers) do not block it. A Window is
// safe for concurrent use.
//
// See docs/ARCHITECTURE.md, "Dispatch and scan", for where the window sits.
package consumer

// Package kafka holds delayq's Kafka plumbing on top of
// github.com/segmentio/kafka-go (imported here as kgo): the names of
// delayq's own topics, the writer and reader presets every role uses, topic
// administration, and Window, the sliding-window offset committer.
//
// Other packages import this one as dqkafka and kafka-go as kafka.
//
// # Writers
//
// NewWriter returns a kafka-go Writer that waits for all in-sync replicas
// (RequireAll; the kafka-go default is no acknowledgement at all), flushes
// a batch after 5 ms (the kafka-go default of 1 s stalls every synchronous
// write of a few messages), routes every message by a hash of its key (one
// key, one partition, as long as the partition count stays) and has no
// Topic of its own: every message names its topic. One writer serves all
// topics of a process; the kafka-go writer is safe for concurrent use and
// runs its own goroutines until Close.
//
// # Readers
//
// NewReader builds a consumer-group reader with fetch settings that suit
// delayq (MinBytes 1, MaxWait 500 ms). Use FetchMessage and commit
// explicitly: ReadMessage commits synchronously after every message when
// CommitInterval is 0, which caps a reader at about 1.4k messages/s.
// CommitMessages commits exactly the offsets given; calling it out of
// order can move a committed offset backwards. Window is the guard for
// work that finishes out of order.
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
// # Topics
//
// EnsureTopics creates missing topics through the controller and treats
// "already exists" as success, so every process can call it at start.
package kafka

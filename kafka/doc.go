// Package kafka is the directory of delayq's Kafka plumbing on top of
// github.com/segmentio/kafka-go. It holds no code of its own; its
// subpackages are named so that callers import them, and kafka-go, without
// aliases:
//
//   - topics: the names of delayq's own topics, Kafka's topic-name rule,
//     and Ensure, which creates missing topics at start;
//   - producer: the writer preset every role uses (RequireAll, 5 ms
//     batches, key-hash routing, per-message topics);
//   - consumer: the consumer-group reader preset, the group timing shared
//     by every group delayq runs, and Window, the sliding-window offset
//     committer for work that finishes out of order;
//   - scantask: the wire format of a scan task on delay-scan, owned by
//     neither the dispatcher that writes it nor the scanner that reads it;
//   - failed: reading and replaying the delay-failed topic;
//   - kafkaauth: TLS and SASL of every connection, and the one-line
//     messages of a refused login or a failed TLS handshake;
//   - committed: the read-committed partition reader of ingest (kafka-go's
//     Reader delivers aborted records and transaction markers).
//   - record: payload.Message and payload.Header, delayq's own message
//     type, from and to kafka-go's, where a stage meets a reader or a
//     writer; the task model and the rules (payload, taskstate, zset)
//     import no Kafka client (docs' TestDomainFreeOfKafkaGo).
//
// See docs/ARCHITECTURE.md for where each topic sits in the flow.
package kafka

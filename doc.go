// Package delayq is the Go client of delayq, a delay service for Kafka: a
// task is an ordinary Kafka message (key, value, headers) that delayq keeps
// and writes to its business topic at the due time.
//
// A Client writes tasks and cancels to delayq's input topics with kafka-go,
// in the wire format of the delay contract (docs/ARCHITECTURE.md, "Wire
// contract"):
//
//   - delay-topic: the business topic;
//   - delay-at: the due time in unix milliseconds (the client always sends
//     an absolute time, also for Task.After, so that the Receipt names
//     exactly the stored task);
//   - delay-id: the task id, the caller's or a snowflake id made by the
//     client (its decimal string, which delayq maps to the same internal id);
//   - delay-op: cancel, with delay-id and delay-at, for Cancel.
//
// Every other header passes through to the delivered message, which also
// gains delay-id and delay-at so consumers can de-duplicate (delivery is at
// least once).
//
// A task due more than Config.SlowAfter (1 h by default) from now goes to
// delay-input-slow, which delayd reads at a limited rate, so that bulk
// far-future loads do not delay near tasks; everything else, and every
// cancel, goes to delay-input.
//
// # Ids
//
// Without Task.ID the client makes a snowflake id (github.com/bwmarrin/snowflake)
// from Config.Node. Snowflake ids are unique only if every process that makes
// them at the same time has its own node id (0..1023): give each running
// process, not each host or service, a distinct Config.Node. Two processes
// with the same node id can make the same id in the same millisecond, and
// then the second task overwrites the first one when both are due at the same
// millisecond.
//
// # Secured Kafka
//
// Config.TLS connects with TLS (a *tls.Config: RootCAs for a private CA,
// Certificates for mutual TLS); Config.SASL authenticates with a kafka-go
// SASL mechanism: plain.Mechanism, or scram.Mechanism(scram.SHA256 or
// scram.SHA512, user, password) of github.com/segmentio/kafka-go/sasl. A
// refused login or a failed TLS handshake comes back as one line that says
// so (a *kafkaauth.Error: "kafka: SASL authentication failed for user
// ...", "kafka: TLS handshake: certificate signed by unknown authority").
//
// # Goroutines and lifecycle
//
// A Client is safe for concurrent use; concurrent Submits share the kafka-go
// writer's batches. Submit and Cancel return once all in-sync replicas have
// the message (RequireAll). Close flushes and closes the writer; it is
// idempotent.
package delayq

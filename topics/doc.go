// Package topics names delayq's own Kafka topics (delay-input,
// delay-input-slow, delay-scan, delay-failed), applies Kafka's topic-name
// rule (Legal), tells internal topics apart (Internal: Kafka's `__*`,
// delayq's own and the well-known ones of Schema Registry, Confluent and
// Kafka Connect, which no task may name) and holds the allow-list of
// --allow-topics (Allow: exact names and `prefix*` patterns; without
// patterns every name but `_*` and `connect-*`).
//
// It is a leaf: the standard library only, so that payload and the other
// domain packages may import it without importing a Kafka client. Creating
// and checking topics on a cluster is package kafka/admin.
package topics

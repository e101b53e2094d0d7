// Package topics names delayq's own Kafka topics (delay-input,
// delay-input-slow, delay-scan, delay-failed), applies Kafka's topic-name
// rule (Legal), tells internal topics apart (Internal: Kafka's `__*`,
// delayq's own and the well-known ones of Schema Registry, Confluent and
// Kafka Connect, which no task may name), holds the allow-list of
// --allow-topics (Allow: exact names and `prefix*` patterns; without
// patterns every name but `_*` and `connect-*`), and creates missing
// topics (Ensure).
//
// Ensure sends one CreateTopics request to the controller and treats
// "already exists" as success, whatever the existing partition count, so
// every process can call it at start.
package topics

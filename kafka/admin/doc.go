// Package admin creates delayq's topics on a Kafka cluster (Ensure, with
// Defaults naming the four of package topics) and asks whether a topic
// exists (Missing), through the TLS and SASL settings of kafka/kafkaauth.
//
// Ensure sends one CreateTopics request to the controller and treats
// "already exists" as success, whatever the existing partition count, so
// every process can call it at start.
package admin

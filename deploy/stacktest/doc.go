// Package stacktest gives integration tests the addresses of the real local
// stack (Kafka, Redis, HBase) that deploy/local/stack starts, after checking
// that each service answers.
//
// Addresses come from the same DELAYQ_* variables delayd reads (DELAYQ_BROKERS,
// DELAYQ_REDIS, DELAYQ_HBASE_ZK) with the same defaults. When a service does
// not answer, a test fails if CI=true and is skipped otherwise, with a message
// that says to run `make up`: a CI run never counts a skipped integration test
// as passed.
package stacktest

// Package secure holds delayq's tests on a secured Kafka and Redis: Kafka
// whose only client listener is SASL_SSL (SCRAM-SHA-512 and -256, the
// standard authorizer) and Redis that speaks only TLS and requires a client
// certificate, both started by `SECURE=1 deploy/local/stack` (see
// deploy/local/secure.sh).
//
// TestMain's first test starts a private stack of its own (data in
// .local/e2e-secure): Kafka on 29292 (SASL_SSL), controller 29293 and the
// loopback PLAINTEXT inter-broker listener 29294, Redis on 26379 (TLS).
// HBase is the shared local stack's, with a table per test. `stack down
// --wipe` removes the private stack when the tests end, and a watcher
// process does it if the test binary dies first.
//
// delayd runs as user delayq, which has only the ACLs docs/security.md lists
// ("Connecting to a secured Kafka and Redis"); the workload is written by
// user producer, which may write delay-input and nothing else; delayctl
// and the Go client log in as delayq. The harness collects business topics
// and delay-failed as a super user on the inter-broker listener, which is
// no client port.
//
// The tests: the pipeline's outside-client scenario (0 lost, 0
// duplicates), delayctl submit/inspect/backlog/cancel/replay and the Go
// client, the one-line errors of a wrong password, an unknown CA and a
// missing Redis client certificate (delayd retries, nothing reaches
// delay-failed), and the producer user's refused reads and writes.
//
// The package takes about 3 minutes, a minute or so of it starting the
// stack (JVMs, then the ACLs with kafka.admin.AclCommand). With -short
// (outside CI) it is skipped; under CI=true a stack that does not start
// fails the tests.
package secure

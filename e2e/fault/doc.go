// Package fault holds delayq's fault-injection tests: a dependency outage
// or a series of delayd restarts under steady input, each judged for lost,
// duplicated, early and cancelled-yet-delivered tasks and for valid tasks
// that went to delay-failed.
//
// The tests take services away, so they never run on the shared local
// stack: TestMain's first test starts a private one with
// `deploy/local/stack up` on ports of its own (Kafka 19092/19093, Redis
// 16379, HBase ZooKeeper 12181, master 16100, region server 16120) and data
// in .local/fault, and `down --wipe` removes it when the tests end (a
// watcher process does it too if the test binary dies first). Services are
// taken away and brought back with `stack stop [--kill]` and `stack start`;
// a service counts as back when a real client call succeeds (a Get on the
// test's HBase table, a Redis PING, Kafka metadata with every delay-input
// partition led).
//
// Each test runs one or two delayd (1 s tick, own prefix, table and HTTP
// port, logs in files) and an outside kafka-go producer at 400 tasks/s,
// delays 0–30 s, about 3 % cancelled (half of the cancels before their
// task), 13 malformed messages (one every 3 s, the rest with the last
// batch). The producer
// retries a batch Kafka did not take until it is written (a task counts as
// accepted from then on) and pauses meanwhile. After the input stops, a test
// waits for the last due time plus a margin, judges, and writes one summary
// line with t.Logf: run `go test -v ./e2e/fault` to read the figures.
//
// The whole package takes about 11 minutes. With -short (outside CI) it is
// skipped; under CI=true a stack that does not start fails the tests.
package fault

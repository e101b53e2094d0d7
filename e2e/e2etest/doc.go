// Package e2etest is the harness of delayq's end-to-end tests (e2e,
// e2e/fault, e2e/cluster, e2e/failover, e2e/netfault and e2e/soak): it builds the delayd binary, runs delayd processes against a
// stack (the shared local stack or a private one), produces workloads to
// delay-input with kafka-go as any user would, collects what reaches the
// business topics and delay-failed, and judges it against a ledger of what
// was accepted.
//
// The fault tests share a Source (a steady stream of tasks, cancels and
// malformed messages at 400 tasks/s, retried while Kafka refuses it) and a
// Phase (one Source with the collectors of its business topic and of
// delay-failed, drained and judged by Finish and Check).
//
// # Isolation
//
// Every Env has its own run name, used as Redis prefix, HBase table and
// topic suffix; sequence headers carry the run name too, so a test never
// counts another run's messages, even on the shared delay-failed topic.
// Collectors read each partition from where it ended when they started.
//
// # Private stacks
//
// PrivateStack runs deploy/local/stack on ports and a data directory of a
// test package's own (e2e/fault takes services away; e2e/cluster needs a
// Redis Cluster; e2e/failover a Kafka and an HBase cluster): started on first use, wiped by the package's TestMain,
// and by a watcher process if the test binary dies first.
//
// # Proxies
//
// ProxiedStack is a PrivateStack whose services delayd reaches through
// toxiproxy's TCP proxies, run in the test process (Proxy; no HTTP API):
// Env.Via gives delayd the proxies' addresses while the test's own
// clients use Env.Stack. Inject and Heal add and remove a Toxic (a black
// hole, latency, resets) on every proxy of one service; the type's doc
// says which connections each proxy can and cannot reach.
//
// # Logs
//
// Each delayd writes its output to a file of its own in the Env's log
// folder: $DELAYQ_E2E_LOGS when set (kept), otherwise a temporary folder
// that is removed when the test passed and kept, with the tails of the last
// logs printed, when it failed.
//
// # Binary
//
// The tests build cmd/delayd from the working tree once per test binary;
// $DELAYQ_E2E_DELAYD names a prebuilt delayd to run instead, for example
// to take "before" figures of an older commit with today's tests.
//
// # Goroutines
//
// One per delayd (waiting for its exit) and one per collected partition;
// all end in the test's cleanup. A proxy has an accept loop and a few per
// connection it carries; a ProxiedStack's proxies live as long as the
// test binary.
package e2etest

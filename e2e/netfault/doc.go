// Package netfault holds delayq's network-fault tests: a fault-injecting
// TCP proxy (toxiproxy, run in the test process) between delayd and one
// of its dependencies at a time, under steady input, each run judged as
// e2e/fault judges an outage.
//
// The faults: a black hole of 30 s (toxiproxy's timeout toxic with no
// timeout: nothing passes either way, and the connections open across it
// are closed when it ends) and 500 ms of added latency on every answer
// for 30 s, each between delayd and Redis, HBase and Kafka. Each test
// checks that the pipeline stalls or slows (the black hole must stop
// deliveries for 10 s at least, the latency must make some delivery
// 400 ms late: the proxy is in the path), and that it resumes with
// nothing lost, early, unknown or cancelled yet delivered, no valid task
// or cancel in delay-failed and delayd still running; duplicates are
// counted, not failed (a produce that timed out is retried).
//
// The stack is private (e2etest.ProxiedStack, ports 31000–31095, data in
// .local/netfault): delayd is given the proxies' addresses, Kafka
// advertises its proxy on a listener of its own, and the region server
// registers itself as 127.0.0.2, where its proxy listens, so ZooKeeper
// and the region server are both behind the HBase proxies (the HBase
// master is not: delayd only creates its table there). The test's own
// producer and collectors reach Kafka and Redis directly.
//
// `make test` runs two of the six (a black hole between delayd and Kafka,
// latency between delayd and HBase: about 100 s each after the stack's
// start, 7 min 12 s in all on a loaded 2-core machine); DELAYQ_NETFAULT_ALL=1,
// which `make faults` sets, runs all six (about 100 s more each). With -short (outside CI) the package is skipped;
// under CI=true a stack that does not start fails the tests.
package netfault

// Package pause tests what a paused delayd does when it wakes (issue 37):
// a long garbage collection, a frozen VM or SIGSTOP freezes a process
// past its Kafka session or its lock while another instance takes its
// work over; when it wakes, it must not act on what it lost.
//
// TestPause runs, on the shared local stack, one delayd with every role
// and one per role (--roles scanner, ingest, dispatcher) under the e2e
// Source's steady input, stops the three single-role processes with
// SIGSTOP until the coordinator has handed their partitions to the first
// (and it has won ticks), continues them with SIGCONT, and checks that
// the scanner's and the ingest's fences refused their writes
// (delayq_fenced_writes_total of the resumed process; the dispatcher's is
// reported: a pause caught inside a lock attempt it lost leaves it
// nothing to refuse), that nothing was lost, early or cancelled and
// delivered, and reports the duplicates.
//
// It pauses only its own delayd processes, but needs a Kafka of its own
// (stack_test.go, ports 25092–25094, started on first use and removed by
// TestMain): delayd's consumer groups and internal topics have fixed
// names, so on the shared Kafka the delayd processes of tests running at
// the same time (another package of `make test`) join the same groups,
// scan each other's scan tasks and drop them (another prefix), and their
// rebalances look like takeovers. Redis and HBase are the shared stack's,
// kept apart by the Env's prefix and table.
package pause

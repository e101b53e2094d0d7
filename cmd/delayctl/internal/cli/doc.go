// Package cli is delayctl, the operator CLI of delayq, built on
// spf13/cobra: the root command with the connection flags of
// docs/ARCHITECTURE.md, "Interfaces", and the commands init, submit,
// cancel, inspect, list, backlog and backfill (plus cobra's help and completion).
//
// Main runs one command line in-process with the given streams,
// environment and clock, which is how cmd/delayctl and the tests call it.
//
// # Flags and environment
//
// Every flag also reads DELAYQ_<FLAG> (upper case, dashes as underscores,
// e.g. DELAYQ_HBASE_ZK); a flag given on the command line beats the
// environment. Times (--at, --until, --from, --to) are RFC 3339, a date
// (2006-01-02, UTC midnight), unix milliseconds, "now", or relative to now
// with a sign: -1h, +30m, -2d (payload.ParseTime). Durations (--after,
// --every, --max-delay) are Go durations, optionally led by whole days
// (2d, 1d12h), or plain seconds (payload.ParseDelay). A due time (--at of
// a task, a reschedule or a cancel; --until) and a delay are checked by
// delayd's rules, the same functions of payload, against --max-delay
// before anything is written: a number that looks like unix seconds is
// refused naming the unit.
//
// # Errors and exit codes
//
// Every failure prints one line to stderr, "delayctl <command>: <reason>",
// naming the flag or variable for bad input and the service and address for
// an unreachable one. Exit codes: 0 success, 1 failure, 2 bad usage (flags,
// arguments, times), 130 interrupted (SIGINT; a backfill first writes the
// batch in hand and prints its summary).
//
// # Reachability
//
// Before the work starts, each command checks the services it needs with
// short timeouts (--timeout, default 5s): Kafka with a connection
// handshake, Redis with PING, HBase by dialing its ZooKeeper (gohbase waits
// forever on an unreachable quorum) and then reading from the table.
//
// Commands run on the caller's goroutine; backfill's pending checks and
// kafka-go's writer start goroutines that end before the command returns.
package cli

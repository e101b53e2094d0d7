// Package e2e holds the end-to-end tests of delayq: they build the delayd
// binary, run one or more delayd processes against the real local stack
// (deploy/local), produce tasks to delay-input with kafka-go as any user
// would, and check what reaches the business topics and delay-failed: every
// valid task delivered, none early, none cancelled, no duplicates, through
// SIGTERM, kill -9 and full outages.
//
// Each test uses its own Redis prefix, HBase table and business topics, so
// runs never see each other's tasks. The figures each test measures
// (lateness percentiles, duplicates after a crash, scan tasks per tick) are
// written with t.Log: run `go test -v ./e2e` to read them.
//
// The harness (building delayd, running it, producing, collecting, judging)
// is package e2e/e2etest, shared with the fault-injection tests in
// e2e/fault, which take services away on a private stack.
package e2e

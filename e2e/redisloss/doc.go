// Package redisloss holds delayq's test of a total loss of the Redis
// index (issue 27): FLUSHALL, then Redis killed -9 and started without its
// data directory, under steady input with tasks pending over the next
// minute and a half, some cancelled by id and rescheduled before the loss,
// and recurring series running across both. delayd notices the generation marker gone and repairs the index
// from HBase by itself (package repair); every pending task is delivered
// once, no cancelled one is, a rescheduled one only at its new time, a
// series' occurrences once each. TestLostTail kills Redis -9 and starts
// it on an append-only file cut back by its last 1.5 s of writes, what an
// appendfsync everysec Redis can lose: the restart shows by the master's
// new replication id, and the same repair brings every task back.
// TestRestart kills Redis -9 40 s into steady input and starts it 15 s
// later on its whole append-only file: the repair re-indexes only what
// was recorded since the watermarks of the last probe it holds, less the
// 3 s margin: no task accepted before that window comes twice (issue 37;
// how many before the kill do, against the target of a second of input,
// is reported: 188 on a quiet machine, 1,087 in a loaded CI run).
//
// TestMain's first test starts a private stack of its own with
// deploy/local/stack (data in .local/e2e-redisloss): Kafka on 22092/22093,
// so that its delayd's fixed consumer groups meet no other test's, and
// Redis on 22379, the one the test flushes and wipes. HBase is the shared local
// stack's, with a table per test. `stack down --wipe` removes the private
// stack when the tests end, and a watcher process does it if the test
// binary dies first.
//
// The package takes about 5 minutes (a minute of it starting Kafka); the
// repair's figures (time from the flush to the repaired index, tasks
// re-indexed, duplicates) are written with t.Log: run
// `go test -v ./e2e/redisloss` to read them.
package redisloss

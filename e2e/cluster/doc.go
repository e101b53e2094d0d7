// Package cluster holds delayq's scale-out tests: several delayd processes
// against a Redis Cluster of three masters and 12-partition topics, under
// steady input, through SIGTERM and kill -9 of delayd and kill -9 of a
// Redis master; and delayctl against the cluster.
//
// TestMain's first test starts a private stack of its own with
// deploy/local/stack (data in .local/e2e-cluster): a Kafka on ports
// 29092/29093, so that delayd creates its fixed-name topics (delay-input,
// delay-scan, …) with 12 partitions and no other test's delayd joins its
// consumer groups, and, with REDIS_CLUSTER=1, three cluster-enabled
// redis-server masters with AOF on 17101–17103 (bus ports +10000), joined
// by `redis-cli --cluster create`. HBase is the shared local stack's, with
// a table per test. `stack down --wipe` removes the private stack when the
// tests end, and a watcher process does it if the test binary dies first.
//
// The figures (lateness, duplicates after kill -9, commands per Redis
// master and where the segment registry lives) are written with t.Log:
// run `go test -v ./e2e/cluster` to read them.
package cluster

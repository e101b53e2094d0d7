// Package redisha holds delayq's tests of Redis failovers on real
// servers: a master killed -9 under steady input, its replica promoted,
// and, with --redis-min-replicas 1, no task lost.
//
// The first test starts a private stack (deploy/local/stack; data in
// .local/e2e-redisha): Kafka on 21092 (controller 21093), a Redis master on
// 21379 with its replica on 21380 and three sentinels on 21381-21383
// (REDIS_SENTINEL=1, master name "delayq", down after 3 s: with the
// stack's 1 s, a CI machine loaded by the other test packages once made
// the sentinels fail over a second and a third time after the kill, so the
// old master never came back as a replica), and a Redis
// Cluster of three masters on 21401-21403 with one replica each on
// 21404-21406 (REDIS_CLUSTER_REPLICA_PORTS, node timeout 5 s). HBase is the
// shared stack's. None of these ports is another package's. The private
// Kafka keeps the fixed consumer groups away from the shared stack's.
//
// Each test runs one delayd (--repair-interval 1s) and input from an
// outside kafka-go producer (e2etest.Source: 400 tasks/s, delays 0-30 s,
// about 3 % cancelled, 13 malformed messages); 10 s in, the master is
// killed -9:
//
//   - TestSentinelFailover (--redis-min-replicas 1): the Sentinel master;
//     once the sentinels name the promoted replica, the old master is
//     started again, as a replica of the new one (until it is in sync,
//     WAIT finds no replica and ingest stalls);
//   - TestClusterFailover (--redis-min-replicas 1): the cluster master on
//     21402; its replica takes its slots, and the old master comes back
//     as a replica;
//   - TestSentinelRepair (no --redis-min-replicas): the Sentinel master
//     again, whichever node it is now; what the replica had not received
//     is lost with the master, and the repair from HBase brings it back;
//   - TestClusterRepair (no --redis-min-replicas; `make faults` only,
//     DELAYQ_FAULTS_FULL=1, about 2 minutes): the cluster master on
//     21401, as TestSentinelRepair; deliveries are held (repair.Guard)
//     until the repair has run, and the duplicates may not exceed 400
//     (one second of input, as e2e/redisloss TestRestart's).
//
// The cluster failovers and TestSentinelRepair must also show that delayd
// saw the promotion by the replication ids (WARN "redis index lost data"
// with cause replid) and completed the repair.
//
// Each is judged like e2e/failover's faults: nothing lost, early or
// unknown, no cancelled task delivered, no valid task or cancel in
// delay-failed, no ERROR line from delayd. Duplicates are counted, not
// failed: a scanner's removal of delivered entries that the dead master
// had not replicated yet comes back with the replica. Each writes one
// summary line (go test -v ./e2e/redisha) with the failover time (kill to
// promotion seen), when the old master was in sync as a replica, the
// longest gap between deliveries and the recovery of lateness.
//
// The package takes about 4 minutes (about 6 with TestClusterRepair).
// With -short (outside CI) it is skipped; under CI=true a stack that does
// not start fails it.
package redisha

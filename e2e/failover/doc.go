// Package failover holds delayq's tests against Kafka and HBase as
// clusters: brokers and RegionServers die, regions move and split, the
// HBase master goes, and nothing accepted is lost.
//
// TestMain's first test starts a private cluster with `CLUSTER=1
// deploy/local/stack up` (deploy/local/cluster.sh; data in .local/failover):
// three KRaft brokers on 24092/24094/24096 (controllers 24093/24095/24097,
// topics replicated 3 times, min.insync.replicas=2), ZooKeeper on 24181, an
// HBase master on 24000 and RegionServers on 24020 and 24030 (ZooKeeper
// sessions of 10 s), Redis on 24379. `down --wipe` removes it when the tests
// end (a watcher process does it too if the test binary dies first). None
// of these ports is the shared stack's, e2e/fault's or e2e/cluster's.
//
// TestFaults starts the cluster once and two delayd once (--brokers lists
// the three brokers, kafka-1 first; --replication-factor 3), then runs five
// faults one after the other, each a subtest with its own business topic
// and input from an outside kafka-go producer (e2etest.Source: 400
// tasks/s, delays 0–30 s, about 3 % cancelled, 13 malformed messages):
//
//   - BrokerKill: kill -9 of the broker leading most delay-input and
//     delay-scan partitions, started again 15 s later (DELAYQ_FAULTS_FULL=1,
//     `make faults`: 30 s; either outlasts the brokers' 6 s session);
//   - RollingBrokerRestart: SIGTERM and start of kafka-1, then kafka-2; one
//     delayd restarts while kafka-1, the first of its --brokers, is away;
//   - RegionServerKill: kill -9 of the RegionServer holding the most
//     regions of the table, started again 30 s later (full: 60 s; either
//     outlasts its 10 s ZooKeeper session);
//   - RegionMoves: every region moved to one RegionServer, a region split,
//     the balancer run and a major compaction requested, under input;
//   - MasterKill: kill -9 of the HBase master, started again 20 s later.
//
// Each is judged like e2e/fault's: nothing lost, early or unknown, no
// cancelled task delivered, no valid task or cancel in delay-failed, every
// malformed message there, no ERROR line from delayd. Duplicates are
// counted and allowed only in the broker faults, where Kafka leaves a
// write's outcome unknown (a leader killed or stepping down while a write
// waits for its replicas; kafka-go has no idempotent producer); the HBase
// faults must show none. Each writes one summary line with t.Logf (run `go
// test -v ./e2e/failover`): the figures, the duplicates split into writes
// kafka-go sent again (same timestamp) and later copies, the longest gap
// between deliveries, the time from the fault's start and from its end
// until lateness stayed under 1 s, and the WARN and ERROR lines delayd
// logged.
//
// The short form took 15 minutes on a 2-core machine at a load average of
// 35–40, 2.6 of them starting the cluster (the full form took 15 in a CI
// run; it is 45 s longer). With -short (outside CI) it is skipped; under
// CI=true a cluster that does not start fails it.
package failover

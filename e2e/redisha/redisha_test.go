package redisha

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/e2e/e2etest"
)

// faultAt is when the master is killed, after the input started.
const faultAt = 10 * time.Second

// TestSentinelFailover: kill -9 of the Sentinel master under input; the
// sentinels promote the replica; the old master is started again and
// becomes the new master's replica. With --redis-min-replicas 1 nothing
// is lost.
func TestSentinelFailover(t *testing.T) {
	e := stack(t)
	if !isMaster(masterPort) {
		t.Fatalf("redis on %d is not the master at the start", masterPort)
	}
	d := e.Start("d0", "--redis", ports(sentinelPorts, ","), "--redis-master", masterName, "--redis-min-replicas", "1", "--repair-interval", "1s")
	p := e.NewPhase(t, "sentinel", []*e2etest.Delayd{d})
	p.At(faultAt)
	killed := time.Now()
	stackCmd(t, "stop", "--kill", "redis")
	promoted := waitFor(t, "replica promoted by the sentinels", 30*time.Second, func() bool {
		return isMaster(replicaPort) && sentinelsName(replicaPort)
	})
	stackCmd(t, "start", "redis")
	back := waitFor(t, "old master in sync as a replica", time.Minute, func() bool { return linkUp(masterPort) })
	judge(t, p, killed, back, fmt.Sprintf("master killed -9, replica promoted after %v, old master in sync as its replica %v after the kill",
		e2etest.Ms(promoted.Sub(killed)), e2etest.Ms(back.Sub(killed))))
}

// TestSentinelRepair: the Sentinel failover without
// --redis-min-replicas: ingest commits once the master acknowledged, so
// the writes the replica had not received when the master died are gone
// with it; delayd sees the promoted replica (its master_replid2 is the old
// master's id) and repairs the index from HBase by itself: nothing lost.
func TestSentinelRepair(t *testing.T) {
	e := stack(t)
	master, replica := "redis", "redis-replica"
	if !isMaster(masterPort) {
		master, replica = replica, master // TestSentinelFailover ran before
	}
	port := map[string]int{"redis": masterPort, "redis-replica": replicaPort}
	d := e.Start("d0", "--redis", ports(sentinelPorts, ","), "--redis-master", masterName, "--repair-interval", "1s")
	waitFor(t, "the generation marker recorded", 30*time.Second, func() bool { return marked(d) })
	p := e.NewPhase(t, "sentinel-repair", []*e2etest.Delayd{d})
	p.At(faultAt)
	killed := time.Now()
	stackCmd(t, "stop", "--kill", master)
	promoted := waitFor(t, "replica promoted by the sentinels", 30*time.Second, func() bool {
		return isMaster(port[replica]) && sentinelsName(port[replica])
	})
	stackCmd(t, "start", master)
	back := waitFor(t, "old master in sync as a replica", time.Minute, func() bool { return linkUp(port[master]) })
	judge(t, p, killed, back, fmt.Sprintf("%s killed -9 without --redis-min-replicas, %s promoted after %v, old master in sync as its replica %v after the kill",
		master, replica, e2etest.Ms(promoted.Sub(killed)), e2etest.Ms(back.Sub(killed))))
	mustRepair(t, d)
}

// TestClusterFailover: kill -9 of a Redis Cluster master that has a
// replica, under input; the replica takes its slots; the old master is
// started again as the replica. With --redis-min-replicas 1 nothing is
// lost, and delayd sees the promoted replica among the masters and
// repairs the index (which had lost nothing).
func TestClusterFailover(t *testing.T) {
	e := stack(t)
	victim, replica := clusterPorts[1], clusterReplicaPorts[1]
	if !isMaster(victim) || isMaster(replica) {
		t.Fatalf("redis-%d is not a master with its replica redis-%d at the start", victim, replica)
	}
	d := e.Start("c0", "--redis", ports(clusterPorts, ","), "--redis-min-replicas", "1", "--repair-interval", "1s")
	waitFor(t, "the generation marker recorded", 30*time.Second, func() bool { return marked(d) })
	p := e.NewPhase(t, "cluster", []*e2etest.Delayd{d})
	p.At(faultAt)
	killed := time.Now()
	stackCmd(t, "stop", "--kill", fmt.Sprintf("redis-%d", victim))
	promoted := waitFor(t, "replica promoted", time.Minute, func() bool { return isMaster(replica) })
	stackCmd(t, "start", fmt.Sprintf("redis-%d", victim))
	back := waitFor(t, "old master in sync as a replica", time.Minute, func() bool { return linkUp(victim) })
	judge(t, p, killed, back, fmt.Sprintf("master redis-%d killed -9, replica redis-%d promoted after %v, old master in sync as its replica %v after the kill",
		victim, replica, e2etest.Ms(promoted.Sub(killed)), e2etest.Ms(back.Sub(killed))))
	mustRepair(t, d)
}

// marked reports whether d's watcher has recorded the index's generation
// (its first check closed the fresh index's "loss"): a failover from then
// on is a change of the recorded replication ids.
func marked(d *e2etest.Delayd) bool {
	return bytes.Contains(d.Logs(), []byte(`"msg":"index repair done"`))
}

// mustRepair checks that d detected the failover by the replication ids
// (cause replid) and completed the repair.
func mustRepair(t *testing.T, d *e2etest.Delayd) {
	t.Helper()
	var detected, done bool
	sc := bufio.NewScanner(bytes.NewReader(d.Logs()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "redis index lost data") && strings.Contains(line, `"cause":"replid"`):
			detected = true
		case detected && strings.Contains(line, `"msg":"index repair done"`):
			done = true
			t.Logf("repair: %s", line)
		}
	}
	if !detected || !done {
		t.Errorf("the failover was not detected and repaired by the replication ids (detected %v, repair done %v)", detected, done)
	}
}

// judge finishes the phase and checks it like e2e/failover's faults,
// duplicates allowed (see the package doc), and with no ERROR line from
// delayd; began is the kill, back when the replica was in place again.
func judge(t *testing.T, p *e2etest.Phase, began, back time.Time, what string) {
	o := p.Finish()
	warns, errs, redone, first := logLevels(p.Procs)
	p.Summary(o, fmt.Sprintf("longest_gap=%v recovery=%v (%v after the replica was back) delayd_warn=%d delayd_error=%d batches_stored_again=%d (%s)",
		e2etest.Ms(o.Report.LongestGap()), e2etest.Ms(o.Report.Recovery(began, time.Second)),
		e2etest.Ms(o.Report.Recovery(back, time.Second)), warns, errs, redone, what))
	p.Check(o, true)
	if errs > 0 {
		t.Errorf("delayd logged %d ERROR lines during the failover (a stall is one WARN/INFO pair), first: %s", errs, first)
	}
}

// logLevels counts the WARN and ERROR lines of procs, and the batches
// stored again because a master was replaced; first is the first ERROR.
func logLevels(procs []*e2etest.Delayd) (warns, errs, redone int, first string) {
	for _, d := range procs {
		sc := bufio.NewScanner(bytes.NewReader(d.Logs()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, `"level":"WARN"`):
				warns++
				if strings.Contains(line, "redis master replaced") {
					redone++
				}
			case strings.Contains(line, `"level":"ERROR"`):
				errs++
				if first == "" {
					first = d.Name + ": " + line
				}
			}
		}
	}
	return warns, errs, redone, first
}

package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/topics"
)

// TestThreeDaemons: three delayd on the three-master Redis Cluster and
// 12-partition topics, 250 tasks/s for 62 s (1 in 40 cancelled). At 15 s
// one delayd gets SIGTERM and is started again at 22 s; at 35 s another
// is killed -9 and stays down. Every task must be delivered, none early,
// no cancelled one; no duplicate may come before the kill (the SIGTERM and
// the rolling restart cause none); the duplicates the kill causes are
// reported.
func TestThreeDaemons(t *testing.T) {
	const rate, runFor = 250, 62 * time.Second
	e := stack(t)
	rdb := clusterClient(t)
	topic := e.Topic("orders")
	out, failed, scans := e.Collect(topic), e.Collect(topics.Failed), e.Collect(topics.Scan)
	var d [3]*e2etest.Delayd
	for i := range d {
		d[i] = e.Start("d"+strconv.Itoa(i), delaydFlags()...)
	}
	statsBefore := commandStats(t, rdb)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	inputDone := make(chan *input, 1)
	go func() { inputDone <- produce(ctx, e, topic, rate, runFor) }()

	sleepUntil(start.Add(15 * time.Second))
	d[1].Stop(t)
	t.Logf("%v: SIGTERM to d1: exited cleanly", time.Since(start).Round(time.Second))
	sleepUntil(start.Add(22 * time.Second))
	d[1] = e.Start("d1-again", delaydFlags()...)
	t.Logf("%v: d1 started again and ready", time.Since(start).Round(time.Second))
	sleepUntil(start.Add(35 * time.Second))
	killAt := time.Now()
	d[2].Kill()
	t.Logf("%v: kill -9 of d2", time.Since(start).Round(time.Second))

	in := <-inputDone
	inputSecs := time.Since(start).Seconds()
	l := in.Ledger()
	r := awaitDelivery(l, out, lastDue(l).Add(60*time.Second))
	statsAfter := commandStats(t, rdb)
	got := out.Snapshot()

	t.Logf("TestThreeDaemons: %v", r)
	t.Logf("input: %d tasks + %d cancelled in %.0f s (%.0f tasks/s), %d producer retries",
		len(l.Due), len(l.Cancelled), inputSecs, float64(len(l.Due)+len(l.Cancelled))/inputSecs, in.retries)
	early := duplicatesBefore(got, killAt)
	t.Logf("duplicates: %d before the kill -9 (SIGTERM, restart), %d after it", early, r.Duplicates-early)
	if r.Lost != 0 || r.Early != 0 || r.CancelledDelivered != 0 || r.Unknown != 0 {
		t.Errorf("three delayd on the cluster: %v", r)
	}
	if r.Delivered != len(l.Due) {
		t.Errorf("delivered %d of %d", r.Delivered, len(l.Due))
	}
	if early != 0 {
		t.Errorf("%d duplicates before the kill -9: the SIGTERM or the restart duplicated", early)
	}
	if f := l.JudgeFailed(failed.Snapshot()); f.Valid != 0 || f.Cancels != 0 {
		t.Errorf("delay-failed: %v", f.Problems(l))
	}
	ticks, doubled := dispatches(t, scans.Snapshot(), e.Run)
	t.Logf("dispatch: %d ticks with scan tasks, %d zsets dispatched twice in one tick", ticks, doubled)
	if ticks < int(runFor/time.Second)/2 || doubled != 0 {
		t.Errorf("dispatch on the cluster: %d ticks, %d zsets twice in a tick; want one redsync winner per tick", ticks, doubled)
	}
	logMasters(t, rdb, e.Run, statsBefore, statsAfter, time.Since(start))
}

// dispatches counts the ticks that emitted scan tasks for zsets of run
// and the zsets that got more than one scan task in the same tick (two
// dispatchers won one tick's lock).
func dispatches(t *testing.T, got []e2etest.Received, run string) (ticks, doubled int) {
	t.Helper()
	perTick := map[int64]map[string]int{}
	for _, g := range got {
		st, err := scantask.Parse(g.Msg)
		if err != nil || !strings.HasPrefix(st.Zset, run+":") {
			continue
		}
		if perTick[st.Until] == nil {
			perTick[st.Until] = map[string]int{}
		}
		perTick[st.Until][st.Zset]++
	}
	for _, zsets := range perTick {
		for _, n := range zsets {
			if n > 1 {
				doubled++
			}
		}
	}
	return len(perTick), doubled
}

// TestMasterKilled: two delayd on the cluster, 200 tasks/s for 30 s; 10 s in,
// the master that holds the segment registry is killed -9 and started
// again 6 s later on its AOF. Nothing may be lost, early or cancelled yet
// delivered; duplicates and how long lateness took to recover are
// reported.
func TestMasterKilled(t *testing.T) {
	const rate, runFor = 200, 30 * time.Second
	e := stack(t)
	rdb := clusterClient(t)
	topic := e.Topic("orders")
	out := e.Collect(topic)
	e.Start("d0", delaydFlags()...)
	e.Start("d1", delaydFlags()...)
	registry := e.Run + ":segments"
	port := masterOf(t, rdb, registry)
	node := "redis-" + strconv.Itoa(port)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	inputDone := make(chan *input, 1)
	go func() { inputDone <- produce(ctx, e, topic, rate, runFor) }()

	sleepUntil(start.Add(10 * time.Second))
	if _, err := private.Cmd("stop", "--kill", node); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	t.Logf("%v: kill -9 of %s (holds %s)", time.Since(start).Round(time.Second), node, registry)
	sleepUntil(down.Add(6 * time.Second))
	took, err := private.Cmd("start", node)
	if err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	n, err := rdb.ZCard(ctx, registry).Result()
	if err != nil || n == 0 {
		t.Errorf("registry after the restart: %d segments, %v; want them back from the AOF", n, err)
	}
	t.Logf("%v: %s back after %v down (start took %v); registry holds %d segments",
		time.Since(start).Round(time.Second), node, back.Sub(down).Round(time.Millisecond), took.Round(time.Millisecond), n)

	in := <-inputDone
	l := in.Ledger()
	r := awaitDelivery(l, out, lastDue(l).Add(60*time.Second))
	t.Logf("TestMasterKilled: %v", r)
	t.Logf("input: %d tasks + %d cancelled, %d producer retries; lateness back under 2s %v after the master returned",
		len(l.Due), len(l.Cancelled), in.retries, r.Recovery(back, 2*time.Second).Round(time.Millisecond))
	if r.Lost != 0 || r.Early != 0 || r.CancelledDelivered != 0 || r.Unknown != 0 {
		t.Errorf("master killed -9 and restarted: %v", r)
	}
}

// awaitDelivery waits until every task of l was delivered (or deadline),
// then 3 s more for late duplicates, and judges.
func awaitDelivery(l e2etest.Ledger, out *e2etest.Collector, deadline time.Time) e2etest.Report {
	for {
		r := l.Judge(out.Snapshot())
		if r.Lost == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	return l.Judge(out.Snapshot())
}

func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// logMasters writes the commands each master served during the test and
// which one holds the segment registry: the figures that say whether the
// registry's master is a hot spot.
func logMasters(t *testing.T, rdb redis.UniversalClient, run string, before, after map[int]map[string]int64, d time.Duration) {
	t.Helper()
	reg := masterOf(t, rdb, run+":segments")
	ports := make([]int, 0, len(after))
	for p := range after {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	var lo, hi int64 = -1, 0
	for _, p := range ports {
		var total int64
		var top []string
		for cmd, n := range after[p] {
			delta := n - before[p][cmd]
			total += delta
			if delta > 0 {
				top = append(top, fmt.Sprintf("%s=%d", cmd, delta))
			}
		}
		slices.Sort(top)
		mark := ""
		if p == reg {
			mark = " (holds the registry)"
		}
		t.Logf("master %d%s: %d commands, %.0f/s: %v", p, mark, total, float64(total)/d.Seconds(), top)
		if lo < 0 || total < lo {
			lo = total
		}
		hi = max(hi, total)
	}
	if lo > 0 {
		t.Logf("busiest master / least busy: %.2f", float64(hi)/float64(lo))
	}
}

package repair

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

func TestWatcherRepairsAfterFlush(t *testing.T) {
	f := newFixture(t, 50)
	ctx := t.Context()
	m, c, zix := miniIndex(t, "w")
	ix := zix.Repairer()
	f.ix = ix
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWatcher(WatchConfig{Prefix: "w", Metrics: metrics}, c, f.store, ix)
	if err != nil {
		t.Fatal(err)
	}
	want := len(f.plain) + len(f.extra)

	// A Redis delayd never used: nothing indexed yet, so the first check
	// repairs everything the store holds.
	if ok, err := w.Check(ctx); err != nil || !ok {
		t.Fatalf("first check: repaired %v, %v", ok, err)
	}
	if got := f.pending(t, append(append([]zset.Entry{}, f.plain...), f.extra...)); got != want {
		t.Fatalf("%d of %d indexed after the first check", got, want)
	}
	if ok, err := w.Check(ctx); err != nil || ok {
		t.Fatalf("second check: repaired %v, %v; want nothing to do", ok, err)
	}
	m.FlushAll()
	if ok, err := w.gen.FlagsTrusted(ctx); err != nil || ok {
		t.Fatalf("op flags trusted after FLUSHALL: %v, %v", ok, err)
	}
	if ok, err := w.Check(ctx); err != nil || !ok {
		t.Fatalf("check after FLUSHALL: repaired %v, %v", ok, err)
	}
	if ok, err := w.gen.FlagsTrusted(ctx); err != nil || !ok {
		t.Fatalf("op flags not trusted after the repair: %v, %v", ok, err)
	}
	flagged, err := ix.Flagged(ctx, []uint64{payload.TaskID("cancelled-id"), payload.TaskID("plain-1")})
	if err != nil || !flagged[0] || flagged[1] {
		t.Fatalf("op flags after the repair (cancelled by id, plain): %v, %v", flagged, err)
	}
	if got := f.pending(t, append(append([]zset.Entry{}, f.plain...), f.extra...)); got != want {
		t.Fatalf("%d of %d indexed after the flush", got, want)
	}
	if got := f.pending(t, f.skipped); got != 0 {
		t.Fatalf("%d cancelled or moved rows indexed", got)
	}
	if got := testutil.ToFloat64(metrics.reindexedTotal); got != float64(2*want) {
		t.Fatalf("delayq_repair_reindexed_total = %v, want %d", got, 2*want)
	}
	if got := testutil.ToFloat64(metrics.detected.WithLabelValues("generation")); got != 2 {
		t.Fatalf("losses detected = %v, want 2", got)
	}
	if got := testutil.CollectAndCount(metrics.duration); got != 1 {
		t.Fatalf("duration histogram: %d series", got)
	}

	// A repair that another process holds the lock of is left to it.
	m.FlushAll()
	if err := c.Set(ctx, "w:repair:lock", "someone", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.Check(ctx); err != nil || ok {
		t.Fatalf("check with the lock taken: repaired %v, %v", ok, err)
	}
	gm, err := w.gen.Read(ctx)
	if err != nil || gm.Lost == 0 || gm.Cause != "generation" {
		t.Fatalf("marker while another repairs: %+v, %v", gm, err)
	}
}

func TestLossSince(t *testing.T) {
	const old, fresh, zero = "aaaa", "bbbb", "0000000000000000000000000000000000000000"
	tests := []struct {
		name   string
		r      Replication
		stored string
		want   string
	}{
		{"same master", Replication{ID: old, ID2: zero}, old, ""},
		{"restarted from its files", Replication{ID: fresh, ID2: zero}, old, causeRestart},
		{"promoted replica", Replication{ID: fresh, ID2: old}, old, causeReplID},
		{"nothing stored yet", Replication{ID: fresh, ID2: zero}, "", ""},
		{"no ids (miniredis)", Replication{}, "", ""},
		{"cluster: same masters", Replication{ID: "aaaa,cccc", ID2: zero + "," + zero}, "aaaa,cccc", ""},
		{"cluster: a master added", Replication{ID: "aaaa,cccc,dddd", ID2: zero + "," + zero + "," + zero}, "aaaa,cccc", ""},
		{"cluster: a master restarted", Replication{ID: "aaaa,eeee", ID2: zero + "," + zero}, "aaaa,cccc", causeRestart},
		{"cluster: a master's replica promoted", Replication{ID: "bbbb,cccc", ID2: "aaaa," + zero}, "aaaa,cccc", causeReplID},
		{"cluster: the other master's replica promoted", Replication{ID: "aaaa,dddd", ID2: zero + ",cccc"}, "aaaa,cccc", causeReplID},
	}
	for _, tc := range tests {
		if got := tc.r.lossSince(tc.stored); got != tc.want {
			t.Errorf("%s: lossSince = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestWatcherLeavesDeliveredOut: a look at the index before the loss
// (its oldest due entry, the watermarks) keeps tasks delivered before the
// loss out of the repair, and the overdue ones still pending in.
func TestWatcherLeavesDeliveredOut(t *testing.T) {
	ctx := t.Context()
	m, c, zix := miniIndex(t, "d")
	ix := zix.Repairer()
	store := payload.NewMemory()
	now := time.Now()
	recorded := now.Add(-time.Minute).UnixMilli()
	var delivered, overdue []zset.Entry
	var tasks []payload.Task
	var ids []payload.IDWrite
	for i := range 40 {
		name := fmt.Sprintf("t-%d", i)
		at := now.Add(-40*time.Second + time.Duration(i)*time.Second).UnixMilli() // due 40 s ago .. 1 s ago
		tasks = append(tasks, payload.Task{ID: payload.TaskID(name), Name: name, Topic: "orders", ExecAt: at})
		ids = append(ids, payload.IDWrite{ID: payload.TaskID(name), Submitted: at, SubmitRecorded: recorded})
		if i < 30 {
			delivered = append(delivered, zset.Entry{ID: payload.TaskID(name), ExecAt: at})
		} else {
			overdue = append(overdue, zset.Entry{ID: payload.TaskID(name), ExecAt: at}) // held: still indexed
		}
	}
	if err := store.Put(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	if err := store.PutIDs(ctx, ids); err != nil {
		t.Fatal(err)
	}
	w, err := NewWatcher(WatchConfig{Prefix: "d", Lookback: time.Hour}, c, store, ix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Check(ctx); err != nil { // the first check: a new index, repaired
		t.Fatal(err)
	}
	// The scanner delivers the first 30 (overdue entries live in the
	// segment of the time they were added).
	keys, err := ix.DueKeys(ctx, now.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := ix.Remove(ctx, k, delivered); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.SetMarks(ctx, map[string]int64{"delay-input/0": now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.Check(ctx); err != nil || ok {
		t.Fatalf("check with the index intact: repaired %v, %v", ok, err)
	}
	m.FlushAll()
	if ok, err := w.Check(ctx); err != nil || !ok {
		t.Fatalf("check after FLUSHALL: repaired %v, %v", ok, err)
	}
	f := &fixture{ix: ix}
	if got := f.pending(t, overdue); got != len(overdue) {
		t.Fatalf("%d of %d overdue tasks held before the loss indexed again", got, len(overdue))
	}
	if got := f.pending(t, delivered); got != 0 {
		t.Fatalf("%d of %d tasks delivered before the loss indexed again (the lookback alone would take all)", got, len(delivered))
	}
}

// TestProbe: the probe value that survived a loss names the watermarks
// read before it was written; a value this process does not remember, a
// missing key or no probe at all tells nothing.
func TestProbe(t *testing.T) {
	ctx := t.Context()
	m, c, zix := miniIndex(t, "p")
	w, err := NewWatcher(WatchConfig{Prefix: "p"}, c, payload.NewMemory(), zix.Repairer())
	if err != nil {
		t.Fatal(err)
	}
	survived := func(want probed, wantFound bool) {
		t.Helper()
		if got, found, err := w.survivedBefore(ctx); err != nil || found != wantFound || got != want {
			t.Fatalf("survivedBefore = %+v, %v, %v; want %+v, %v", got, found, err, want, wantFound)
		}
	}
	survived(probed{}, false) // nothing written yet
	for i := range int64(probesKept + 3) {
		if err := w.probe(ctx, 1000+i, 2000+i, ""); err != nil {
			t.Fatal(err)
		}
	}
	last := int64(probesKept + 3)
	survived(probed{last, 1000 + last - 1, 2000 + last - 1}, true) // the last write survived
	if ttl := m.TTL(w.probeKey); ttl != probeTTL {
		t.Errorf("probe key TTL %v, want %v", ttl, probeTTL)
	}
	if err := c.Set(ctx, w.probeKey, last-10, 0).Err(); err != nil { // the restart lost the last 10 writes
		t.Fatal(err)
	}
	survived(probed{last - 10, 1000 + last - 11, 2000 + last - 11}, true)
	if err := c.Set(ctx, w.probeKey, 2, 0).Err(); err != nil { // older than the values kept
		t.Fatal(err)
	}
	survived(probed{n: 2}, false)
	m.Del(w.probeKey) // expired, or Redis restarted without its data
	survived(probed{}, false)

	// A probe written after the masters changed is not remembered.
	if err := w.probe(ctx, 5000, 5000, "another-master"); err != nil {
		t.Fatal(err)
	}
	survived(probed{n: w.probeN}, false)
}

// TestLostSince: the failover and restart window starts at the
// watermarks the surviving probe followed, less the margin, whether that
// is later than Failover before the loss (ingest kept up: the old rule's
// 2 minutes re-delivered everything in them) or earlier (ingest lagged).
// Where the probe tells nothing it starts Failover before the master was
// last seen up, or at the probe's delay-input watermark when that is
// earlier.
func TestLostSince(t *testing.T) {
	const lost, minute = int64(10_000_000), int64(60_000)
	const failover, margin = 2 * time.Minute, 3 * time.Second
	for _, tc := range []struct {
		name   string
		e      lossEvidence
		want   int64
		window string
	}{
		{"no look, no probe", lossEvidence{Lost: lost}, lost - 2*minute, windowNoProbe},
		{"last seen up 10 min before, no probe", lossEvidence{Lost: lost, Seen: lost - 10*minute}, lost - 12*minute, windowNoProbe},
		{"ingest kept up: from the probe, not 2 min back",
			lossEvidence{Lost: lost, Seen: lost - 5000, Probe: probed{7, lost - 6000, lost - 5500}, Found: true},
			lost - 6000 - 3000, windowProbe},
		{"the slow topic's watermark is the lower",
			lossEvidence{Lost: lost, Seen: lost - 5000, Probe: probed{7, lost - 6000, lost - 9000}, Found: true},
			lost - 9000 - 3000, windowProbe},
		{"the last probes were lost: from the one that survived",
			lossEvidence{Lost: lost, Seen: lost - 1000, Probe: probed{3, lost - 40_000, lost - 40_000}, Found: true},
			lost - 40_000 - 3000, windowProbe},
		{"ingest lagged 10 min", lossEvidence{Lost: lost, Seen: lost - 5000, Probe: probed{7, lost - 10*minute, lost - 1000}, Found: true},
			lost - 10*minute - 3000, windowProbe},
		{"slow input lagged 10 min", lossEvidence{Lost: lost, Seen: lost - 5000, Probe: probed{7, lost - 6000, lost - 10*minute}, Found: true},
			lost - 10*minute - 3000, windowProbe},
		{"a value not remembered", lossEvidence{Lost: lost, Seen: lost - 5000, Probe: probed{7, lost - 6000, lost - 5500}},
			lost - 5000 - 2*minute, windowNoProbe},
		{"no slow watermark: Failover back", lossEvidence{Lost: lost, Seen: lost - 5000, Probe: probed{7, lost - 6000, 0}, Found: true},
			lost - 5000 - 2*minute, windowSlowMark},
		{"no slow watermark, ingest lagged 10 min", lossEvidence{Lost: lost, Seen: lost - 5000, Probe: probed{7, lost - 10*minute, 0}, Found: true},
			lost - 10*minute - 3000, windowSlowMark},
		{"redis cluster", lossEvidence{Lost: lost, Seen: lost - 5000, Cluster: true}, lost - 5000 - 2*minute, windowCluster},
	} {
		got, window := lostSince(tc.e, failover, margin)
		if got != tc.want || window != tc.window {
			t.Errorf("%s: lostSince = %d (%d s before the loss), %q; want %d (%d s before), %q",
				tc.name, got, (lost-got)/1000, window, tc.want, (lost-tc.want)/1000, tc.window)
		}
	}
}

// TestWatcherProbesBetweenChecks: Run writes a probe every Probe between
// its checks, with the watermarks of both input topics; a failed probe
// stops them until a check (a Redis back from a restart must keep the
// value that tells what survived), and so does a check that finds a
// loss.
func TestWatcherProbesBetweenChecks(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	m, c, zix := miniIndex(t, "b")
	ix := zix.Repairer()
	w, err := NewWatcher(WatchConfig{Prefix: "b", Interval: time.Hour, Probe: 10 * time.Millisecond}, c, payload.NewMemory(), ix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Check(ctx); err != nil { // a new index: repaired
		t.Fatal(err)
	}
	if err := ix.SetMarks(ctx, map[string]int64{"delay-input/0": 5000, "delay-input/1": 4000, "delay-input-slow/0": 3000}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := c.Get(ctx, w.probeKey).Int64()
		if err == nil && n >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("probe %d (%v) after 30 s with Probe 10ms and Interval 1h: not written between checks", n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p, found, err := w.survivedBefore(t.Context())
	if err != nil || !found || p.stored != 4000 || p.slow != 3000 {
		t.Fatalf("survivedBefore = %+v, %v, %v; want the lowest watermarks 4000 and 3000", p, found, err)
	}

	// Redis away: the probe fails, and none is written once it is back.
	held := w.probeN
	m.Close()
	if err := w.probeBetween(t.Context()); err == nil {
		t.Fatal("probe with Redis away: no error")
	}
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := w.probeBetween(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Get(t.Context(), w.probeKey).Int64(); err != nil || n != held {
		t.Fatalf("probe after Redis came back = %d, %v; want %d, the value it kept", n, err, held)
	}
	if _, err := w.Check(t.Context()); err != nil { // the masters unchanged: probes again
		t.Fatal(err)
	}
	if err := w.probeBetween(t.Context()); err != nil || w.probeN == held {
		t.Fatalf("no probe after a check found the masters unchanged (%d, %v)", w.probeN, err)
	}

	// A loss found: no probe until a check finds the masters unchanged.
	if _, err := w.gen.MarkLost(t.Context(), time.Now().UnixMilli(), causeRestart); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(t.Context(), "b:repair:lock", "someone", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := w.probeN
	if err := w.probeBetween(t.Context()); err != nil || w.probeN != before {
		t.Fatalf("probe written after a check found a loss (%d -> %d, %v)", before, w.probeN, err)
	}
}

// With NewIndex (delayd --embedded) the first check of a Redis without a
// marker records a new generation: no repair, no WARN, no loss counted.
// A FLUSHALL after that is a loss like any other.
func TestWatcherNewIndex(t *testing.T) {
	f := newFixture(t, 20)
	ctx := t.Context()
	m, c, zix := miniIndex(t, "n")
	ix := zix.Repairer()
	f.ix = ix
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := NewWatcher(WatchConfig{Prefix: "n", Metrics: metrics, Logger: logger, NewIndex: true}, c, f.store, ix)
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]zset.Entry{}, f.plain...), f.extra...)
	for i := range 2 {
		if ok, err := w.Check(ctx); err != nil || ok {
			t.Fatalf("check %d of a new index: repaired %v, %v; want nothing to do", i, ok, err)
		}
	}
	if mk, err := w.gen.Read(ctx); err != nil || mk.ID == "" || mk.Lost != 0 {
		t.Fatalf("marker after the first check: %+v, %v; want a generation id and no loss", mk, err)
	}
	if got := f.pending(t, all); got != 0 {
		t.Fatalf("%d tasks indexed: the first check repaired", got)
	}
	if strings.Contains(logs.String(), "lost data") || testutil.ToFloat64(metrics.detected.WithLabelValues("generation")) != 0 {
		t.Fatalf("a new index reported as a loss:\n%s", logs.String())
	}

	m.FlushAll()
	if ok, err := w.Check(ctx); err != nil || !ok {
		t.Fatalf("check after FLUSHALL: repaired %v, %v", ok, err)
	}
	if got := f.pending(t, all); got != len(all) {
		t.Fatalf("%d of %d indexed after the flush", got, len(all))
	}
	if !strings.Contains(logs.String(), "redis index lost data") {
		t.Fatalf("no WARN for the FLUSHALL:\n%s", logs.String())
	}
}

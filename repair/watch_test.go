package repair

import (
	"bytes"
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

// TestProbe: the probe value that survived a loss names the watermark
// read before it was written; a value this process does not remember, a
// missing key or no probe at all tells nothing.
func TestProbe(t *testing.T) {
	ctx := t.Context()
	m, c, zix := miniIndex(t, "p")
	w, err := NewWatcher(WatchConfig{Prefix: "p"}, c, payload.NewMemory(), zix.Repairer())
	if err != nil {
		t.Fatal(err)
	}
	survived := func(want int64) {
		t.Helper()
		if got, err := w.survivedBefore(ctx); err != nil || got != want {
			t.Fatalf("survivedBefore = %d, %v; want %d", got, err, want)
		}
	}
	survived(0) // nothing written yet
	for i := range probesKept + 3 {
		if err := w.probe(ctx, int64(1000+i), ""); err != nil {
			t.Fatal(err)
		}
	}
	survived(1000 + probesKept + 2) // the last write survived
	if ttl := m.TTL(w.probeKey); ttl != probeTTL {
		t.Errorf("probe key TTL %v, want %v", ttl, probeTTL)
	}
	last := probesKept + 3
	if err := c.Set(ctx, w.probeKey, last-10, 0).Err(); err != nil { // the restart lost the last 10 writes
		t.Fatal(err)
	}
	survived(int64(1000 + last - 11))
	if err := c.Set(ctx, w.probeKey, 2, 0).Err(); err != nil { // older than the values kept
		t.Fatal(err)
	}
	survived(0)
	m.Del(w.probeKey) // expired, or Redis restarted without its data
	survived(0)

	// A probe written after the masters changed is not remembered.
	if err := w.probe(ctx, 5000, "another-master"); err != nil {
		t.Fatal(err)
	}
	survived(0)
}

// TestLostSince: the failover and restart window starts Failover before
// the master was last seen up, or earlier at the watermark the surviving
// probe followed when ingest lagged.
func TestLostSince(t *testing.T) {
	const lost, minute = int64(10_000_000), int64(60_000)
	w := &Watcher{cfg: WatchConfig{Failover: 2 * time.Minute, Margin: 3 * time.Second}}
	for _, tc := range []struct {
		name         string
		seen, stored int64
		want         int64
	}{
		{"no look, no probe", 0, 0, lost - 2*minute},
		{"last seen up 10 min before", lost - 10*minute, 0, lost - 12*minute},
		{"ingest kept up", lost - 5000, lost - 6000, lost - 5000 - 2*minute},
		{"ingest lagged 10 min", lost - 5000, lost - 10*minute, lost - 10*minute - 3000},
	} {
		w.seen = tc.seen
		if got := w.lostSince(lost, tc.stored); got != tc.want {
			t.Errorf("%s: lostSince = %d, want %d", tc.name, got, tc.want)
		}
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

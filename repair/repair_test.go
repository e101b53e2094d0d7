package repair

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/taskstate"
	"github.com/delayq/delayq/zset"
)

func TestDecide(t *testing.T) {
	const at = 1_000_000
	tests := []struct {
		name string
		task payload.Task
		st   taskstate.State
		want Verdict
		w    Window // of record times
	}{
		{"submitted", payload.Task{ExecAt: at}, taskstate.State{Submitted: at}, Pending, Window{}},
		{"no id row", payload.Task{ExecAt: at}, taskstate.State{}, Pending, Window{}},
		{"row cancelled", payload.Task{ExecAt: at, Cancel: true}, taskstate.State{Submitted: at}, Cancelled, Window{}},
		{"id cancelled", payload.Task{ExecAt: at}, taskstate.State{Submitted: at, Cancelled: true}, Cancelled, Window{}},
		{"moved away", payload.Task{ExecAt: at}, taskstate.State{Submitted: at, At: at + 5}, Moved, Window{}},
		{"moved here", payload.Task{ExecAt: at + 5}, taskstate.State{Submitted: at, At: at + 5, Moving: at + 5}, Pending, Window{}},
		{"resubmitted elsewhere", payload.Task{ExecAt: at}, taskstate.State{Submitted: at + 9}, Moved, Window{}},
		{"past occurrence", payload.Task{ExecAt: at}, taskstate.State{Submitted: at, At: at + 60_000}, Moved, Window{}},
		{"recorded after", payload.Task{ExecAt: at}, taskstate.State{Submitted: at, SubmitRecorded: 501}, Unrecorded, Window{From: 100, To: 500}},
		{"moved after", payload.Task{ExecAt: at + 5}, taskstate.State{Submitted: at, At: at + 5, Moving: at + 5, SubmitRecorded: 101, MoveRecorded: 501}, Unrecorded, Window{From: 100, To: 500}},
		{"settled: delivered", payload.Task{ExecAt: at - 11}, taskstate.State{Submitted: at - 11, SubmitRecorded: 49}, Delivered, Window{}},
		{"settled: recorded since", payload.Task{ExecAt: at - 11}, taskstate.State{Submitted: at - 11, SubmitRecorded: 50}, Pending, Window{}},
		{"settled: record time unknown", payload.Task{ExecAt: at - 11}, taskstate.State{Submitted: at - 11}, Pending, Window{}},
		{"settled: due after", payload.Task{ExecAt: at - 10}, taskstate.State{Submitted: at - 10, SubmitRecorded: 49}, Pending, Window{}},
		{"next occurrence, recorded long before", payload.Task{ExecAt: at - 11}, taskstate.State{Submitted: at - 99, At: at - 11, SubmitRecorded: 1}, Pending, Window{From: 100, To: 500}},
		{"rescheduled, recorded before", payload.Task{ExecAt: at - 11}, taskstate.State{Submitted: at - 99, At: at - 11, Moving: at - 11, SubmitRecorded: 1, MoveRecorded: 49}, Delivered, Window{}},
		{"unknown record time, no window", payload.Task{ExecAt: at}, taskstate.State{Submitted: at}, Pending, Window{}},
		{"unknown record time, a window", payload.Task{ExecAt: at}, taskstate.State{Submitted: at}, Unrecorded, Window{From: 100}},
		{"recorded in", payload.Task{ExecAt: at}, taskstate.State{Submitted: at, SubmitRecorded: 500}, Pending, Window{From: 100, To: 500}},
		{"recorded before", payload.Task{ExecAt: at}, taskstate.State{Submitted: at, SubmitRecorded: 99}, Unrecorded, Window{From: 100, To: 500}},
		{"moved in", payload.Task{ExecAt: at + 5}, taskstate.State{Submitted: at, At: at + 5, Moving: at + 5, SubmitRecorded: 1, MoveRecorded: 100}, Pending, Window{From: 100, To: 500}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.task, tc.st, tc.w, Settled{Before: at - 10, RecordedBefore: 50}); got != tc.want {
				t.Fatalf("Decide = %d, want %d", got, tc.want)
			}
		})
	}
}

// fixture stores tasks in a Memory store: n plain ones due at base+i s,
// and one of each kind the repair must leave out or index once.
type fixture struct {
	store   *payload.Memory
	ix      zset.Repairer
	base    int64
	plain   []zset.Entry
	extra   []zset.Entry // pending besides plain: the moved task's new row, the series' next occurrence, a row without id row
	skipped []zset.Entry // never to be indexed
}

func newFixture(t *testing.T, n int) *fixture {
	t.Helper()
	ctx := t.Context()
	_, _, zix := miniIndex(t, "t")
	ix := zix.Repairer()
	f := &fixture{store: payload.NewMemory(), ix: ix, base: time.Now().Add(time.Hour).UnixMilli()}
	var tasks []payload.Task
	var ids []payload.IDWrite
	task := func(name string, at int64, cancel bool) payload.Task {
		t := payload.Task{ID: payload.TaskID(name), Name: name, Topic: "orders", ExecAt: at, Value: []byte("v"), Cancel: cancel}
		tasks = append(tasks, t)
		return t
	}
	for i := range n {
		tk := task(fmt.Sprintf("plain-%d", i), f.base+int64(i)*1000, false)
		ids = append(ids, payload.IDWrite{ID: tk.ID, Submitted: tk.ExecAt, SubmitRecorded: 1})
		f.plain = append(f.plain, zset.Entry{ID: tk.ID, ExecAt: tk.ExecAt})
	}
	// Cancelled by id and due time: the cancel marker in its row.
	c1 := task("cancelled-row", f.base+10, false)
	task("cancelled-row", f.base+10, true)
	ids = append(ids, payload.IDWrite{ID: c1.ID, Submitted: c1.ExecAt})
	// Cancelled by id alone.
	c2 := task("cancelled-id", f.base+20, false)
	ids = append(ids, payload.IDWrite{ID: c2.ID, Submitted: c2.ExecAt, Cancel: true})
	// Rescheduled: the old row (left unmarked here, as a crash between
	// copy and marker would) and its copy at the id's current due time.
	r := task("moved", f.base+30, false)
	rNew := task("moved", f.base+90_000, false)
	ids = append(ids, payload.IDWrite{ID: r.ID, Submitted: r.ExecAt, At: rNew.ExecAt, Moving: rNew.ExecAt})
	// A series: a past occurrence's row and the next one's.
	s0 := task("series", f.base+40, false)
	s1 := task("series", f.base+120_000, false)
	ids = append(ids, payload.IDWrite{ID: s0.ID, Submitted: s0.ExecAt, At: s1.ExecAt})
	// A row without an id row (written before id rows existed).
	legacy := task("legacy", f.base+50, false)
	if err := f.store.Put(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	if err := f.store.PutIDs(ctx, ids); err != nil {
		t.Fatal(err)
	}
	e := func(tk payload.Task) zset.Entry { return zset.Entry{ID: tk.ID, ExecAt: tk.ExecAt} }
	f.extra = []zset.Entry{e(rNew), e(s1), e(legacy)}
	f.skipped = []zset.Entry{e(c1), e(c2), e(r), e(s0)}
	return f
}

func (f *fixture) pending(t *testing.T, entries []zset.Entry) int {
	t.Helper()
	n := 0
	for _, e := range entries {
		ok, err := f.ix.Pending(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			n++
		}
	}
	return n
}

func TestRun(t *testing.T) {
	f := newFixture(t, 200)
	ctx := t.Context()
	// Half of the plain tasks are still indexed.
	if err := f.ix.Add(ctx, time.Now(), f.plain[:100]); err != nil {
		t.Fatal(err)
	}
	cfg := Config{From: f.base, To: f.base + time.Hour.Milliseconds(), BatchSize: 64}
	wantMissing := int64(100 + len(f.extra))

	dry := cfg
	dry.DryRun = true
	stats, err := Run(ctx, dry, f.store, f.ix)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Reindexed != wantMissing || stats.Present != 100 || stats.Cancelled != 2 || stats.Moved != 2 || stats.Resume != cfg.To {
		t.Fatalf("dry run: %+v, want %d missing, 100 present, 2 cancelled (a marked row, an id), 2 moved", stats, wantMissing)
	}
	if got := f.pending(t, f.plain); got != 100 {
		t.Fatalf("dry run wrote: %d plain tasks indexed, want 100", got)
	}

	stats, err = Run(ctx, cfg, f.store, f.ix)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Reindexed != wantMissing || stats.Overdue != 0 {
		t.Fatalf("repair: %+v, want %d re-indexed, none overdue", stats, wantMissing)
	}
	if got := f.pending(t, append(append([]zset.Entry{}, f.plain...), f.extra...)); got != len(f.plain)+len(f.extra) {
		t.Fatalf("after repair %d of %d pending tasks indexed", got, len(f.plain)+len(f.extra))
	}
	if got := f.pending(t, f.skipped); got != 0 {
		t.Fatalf("repair indexed %d cancelled or moved rows", got)
	}
	backlog := func() int64 {
		segs, err := f.ix.Backlog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, s := range segs {
			n += s.Pending
		}
		return n
	}
	before := backlog()

	stats, err = Run(ctx, cfg, f.store, f.ix)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Reindexed != 0 || stats.Present != int64(len(f.plain)+len(f.extra)) {
		t.Fatalf("second repair: %+v, want nothing re-indexed", stats)
	}
	if after := backlog(); after != before || after != int64(len(f.plain)+len(f.extra)) {
		t.Fatalf("backlog %d after the second repair, %d before, want %d", after, before, len(f.plain)+len(f.extra))
	}
}

// TestRunUncheckedOverdue: an unchecked repair (the automatic one) still
// asks the index about the overdue rows: an Add of a row whose segment has
// ended goes to the segment of now, and one the index has in its own
// would then be there twice (delivered twice: the duplicates of a Redis
// restart repaired across a minute's end). Those not yet due it adds
// without asking.
func TestRunUncheckedOverdue(t *testing.T) {
	f := newFixture(t, 40)
	ctx := t.Context()
	half := f.plain[:20]
	if err := f.ix.Add(ctx, time.UnixMilli(f.base), half); err != nil { // in their own segments
		t.Fatal(err)
	}
	later := time.UnixMilli(f.base).Add(10 * time.Minute) // every row overdue, its segment ended
	stats, err := Run(ctx, Config{From: f.base, To: f.base + time.Hour.Milliseconds(), Unchecked: true,
		Now: func() time.Time { return later }}, f.store, f.ix)
	if err != nil {
		t.Fatal(err)
	}
	want := len(f.plain) + len(f.extra)
	if stats.Present != int64(len(half)) || stats.Reindexed != int64(want-len(half)) || stats.Overdue != stats.Reindexed {
		t.Errorf("repair: %+v, want %d present, %d re-indexed, all overdue", stats, len(half), want-len(half))
	}
	segs, err := f.ix.Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, s := range segs {
		n += s.Pending
	}
	if n != int64(want) {
		t.Errorf("%d entries in the index, want %d: a present overdue row added again", n, want)
	}
}

func TestRunRecordedWindow(t *testing.T) {
	f := newFixture(t, 10)
	ctx := t.Context()
	run := func(w Window) Stats {
		t.Helper()
		stats, err := Run(ctx, Config{From: f.base, To: f.base + time.Hour.Milliseconds(), DryRun: true, Recorded: w}, f.store, f.ix)
		if err != nil {
			t.Fatal(err)
		}
		return stats
	}
	all := run(Window{})
	// The plain tasks were recorded at 1, the others at 0 (unknown).
	if got := run(Window{To: 1}); got.Unrecorded != 0 || got.Reindexed != all.Reindexed {
		t.Fatalf("window up to 1: %+v; no window: %+v", got, all)
	}
	if err := f.store.PutIDs(ctx, []payload.IDWrite{{ID: f.plain[0].ID, SubmitRecorded: 2}}); err != nil {
		t.Fatal(err)
	}
	if got := run(Window{To: 1}); got.Unrecorded != 1 || got.Reindexed != all.Reindexed-1 {
		t.Fatalf("window up to 1, one recorded at 2: %+v", got)
	}
	// From 2: the plain tasks but the one, the moved task's copy and the
	// row without id row are left out; the series' next occurrence, which
	// no message recorded, is not.
	if got := run(Window{From: 2}); got.Unrecorded != int64(len(f.plain)-1+len(f.extra)-1) || got.Reindexed != 2 {
		t.Fatalf("window from 2: %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{From: 10, To: 10}).Validate(); err == nil {
		t.Fatal("empty range accepted")
	}
	if err := (Config{From: -1, To: 10, BatchSize: -1}).Validate(); err == nil {
		t.Fatal("negative from and batch accepted")
	}
	if err := (WatchConfig{}).Validate(); err == nil {
		t.Fatal("watch config without prefix accepted")
	}
}

// miniIndex returns a miniredis, a client of it (closed when the test
// ends) and a zset index under prefix on it.
func miniIndex(t *testing.T, prefix string) (*miniredis.Miniredis, *redis.Client, *zset.Index) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	zix, err := zset.New(c, zset.Config{Prefix: prefix, Segment: time.Minute, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	return m, c, zix
}

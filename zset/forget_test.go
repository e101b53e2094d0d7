package zset

import (
	"context"
	"testing"
	"time"
)

// Forget removes a task's entry wherever Add put it (its own segment, a
// later family, the segment of now for an overdue one) and lowers the
// backlog by exactly what it removed; other tasks of the id stay.
func TestForget(t *testing.T) {
	ctx := context.Background()
	ix, _, _ := newTestIndex(t, Config{Shards: 2, Fill: 2})
	now := time.Now()
	due := ms(now.Add(time.Hour))
	var dense []Entry // 12 tasks in one segment of 2 shards x fill 2: several families
	for i := range 12 {
		dense = append(dense, Entry{ID: uint64(100 + i), ExecAt: due + int64(i)})
	}
	late := Entry{ID: 7, ExecAt: ms(now.Add(-time.Hour))} // lands in the segment of now
	reused := Entry{ID: 100, ExecAt: due + 5_000}         // id 100 again, another due time
	if err := ix.Writer().Add(ctx, now, append(append(dense, late), reused)); err != nil {
		t.Fatal(err)
	}
	total := func() int64 {
		t.Helper()
		segs, err := ix.Maintenance().Backlog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, s := range segs {
			n += s.Pending
		}
		return n
	}
	if got := total(); got != 14 {
		t.Fatalf("backlog after Add = %d, want 14", got)
	}
	tests := []struct {
		name    string
		forget  []Entry
		gone    []Entry
		backlog int64
	}{
		{"the last family's task", []Entry{dense[11]}, []Entry{dense[11]}, 13},
		{"overdue, in the segment of now", []Entry{late}, []Entry{late}, 12},
		{"one task of a reused id", []Entry{dense[0]}, []Entry{dense[0]}, 11},
		{"again: nothing", []Entry{dense[0], late}, nil, 11},
		{"not indexed, refused by Add", []Entry{{ID: 100, ExecAt: due + 1}, {ID: 1, ExecAt: 0}}, nil, 11},
		{"the rest, twice in one call", append(append([]Entry{}, dense[1:11]...), dense[1:11]...), dense[1:11], 1},
	}
	before := total()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ix.Writer().Forget(ctx, now, tt.forget)
			if err != nil {
				t.Fatal(err)
			}
			if n != before-tt.backlog {
				t.Errorf("Forget says it removed %d, the backlog fell by %d", n, before-tt.backlog)
			}
			before = tt.backlog
			for _, e := range tt.gone {
				if ok, err := ix.Maintenance().Pending(ctx, e); err != nil || ok {
					t.Fatalf("Pending(%+v) = %v, %v after Forget, want false", e, ok, err)
				}
			}
			if got := total(); got != tt.backlog {
				t.Fatalf("backlog = %d, want %d", got, tt.backlog)
			}
		})
	}
	if ok, err := ix.Maintenance().Pending(ctx, reused); err != nil || !ok {
		t.Fatalf("Forget of id 100 at %d removed its task at %d: Pending = %v, %v", dense[0].ExecAt, reused.ExecAt, ok, err)
	}
}

// A reschedule within one zset leaves the task's new entry as
// "<id>@<score>" beside the old "<id>". Forget of the old one hands the
// plain form to the new one, so adding the new one again (a re-read
// batch) adds no second member and the backlog stays 1.
func TestForgetPromotes(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{Shards: 1})
	now := time.Now()
	old := Entry{ID: 42, ExecAt: ms(now.Add(time.Hour).Truncate(time.Minute))}
	moved := Entry{ID: 42, ExecAt: old.ExecAt + 20_000}
	if err := ix.Writer().Add(ctx, now, []Entry{old}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Writer().Add(ctx, now, []Entry{moved}); err != nil {
		t.Fatal(err)
	}
	if n, err := ix.Writer().Forget(ctx, now, []Entry{old}); err != nil || n != 1 {
		t.Fatalf("Forget = %d, %v; want 1", n, err)
	}
	if err := ix.Writer().Add(ctx, now, []Entry{moved}); err != nil { // the re-read
		t.Fatal(err)
	}
	got := members(t, c, ix.Key(moved))
	if len(got) != 1 {
		t.Fatalf("zset holds %v, want the moved task once, as \"42\"", got)
	}
	if _, ok := got["42"]; !ok {
		t.Fatalf("zset holds %v, want the plain member 42", got)
	}
	segs, err := ix.Maintenance().Backlog(ctx)
	if err != nil || len(segs) != 1 || segs[0].Pending != 1 {
		t.Fatalf("Backlog = %+v, %v; want 1 pending", segs, err)
	}
	if ok, err := ix.Maintenance().Pending(ctx, moved); err != nil || !ok {
		t.Fatalf("Pending(moved) = %v, %v", ok, err)
	}
}

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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ix.Writer().Forget(ctx, now, tt.forget); err != nil {
				t.Fatal(err)
			}
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

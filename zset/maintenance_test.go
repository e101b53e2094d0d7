package zset

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestRetire(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{Shards: 4})
	a := Entry{ID: 1, ExecAt: ms(t0)}                      // segment 14:59
	b := Entry{ID: 2, ExecAt: ms(t0.Add(time.Minute))}     // segment 15:00
	d := Entry{ID: 3, ExecAt: ms(t0.Add(2 * time.Minute))} // segment 15:01
	if err := ix.Writer().Add(ctx, t0, []Entry{a, b, d}); err != nil {
		t.Fatal(err)
	}
	// Drain 14:59 and 15:01; 15:00 keeps its member.
	if err := ix.Reader().Remove(ctx, ix.Key(a), []Entry{a}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Reader().Remove(ctx, ix.Key(d), []Entry{d}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		before time.Time
		want   int
		left   []string
	}{
		{"nothing ended", t0.Add(59 * time.Second), 0, []string{"202501311459", "202501311500", "202501311501"}},
		{"drained and ended", t0.Add(time.Minute), 1, []string{"202501311500", "202501311501"}},
		{"not empty stays", t0.Add(2 * time.Minute), 0, []string{"202501311500", "202501311501"}},
		{"second drained", t0.Add(time.Hour), 1, []string{"202501311500"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ix.Maintenance().Retire(ctx, ms(tt.before))
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.want {
				t.Fatalf("Retire = %d, want %d", n, tt.want)
			}
			if left := c.ZRange(ctx, ix.Registry(), 0, -1).Val(); !slices.Equal(left, tt.left) {
				t.Fatalf("registry = %v, want %v", left, tt.left)
			}
		})
	}
}

func TestBacklog(t *testing.T) {
	ctx := context.Background()
	ix, _, _ := newTestIndex(t, Config{Shards: 4})
	var entries []Entry
	for i := range 10 {
		entries = append(entries, Entry{ID: uint64(i), ExecAt: ms(t0.Add(time.Minute)) + int64(i)})
	}
	for i := range 3 {
		entries = append(entries, Entry{ID: uint64(100 + i), ExecAt: ms(t0.Add(time.Hour))})
	}
	if err := ix.Writer().Add(ctx, t0, entries); err != nil {
		t.Fatal(err)
	}
	got, err := ix.Maintenance().Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []SegmentCount{
		{Segment: "202501311500", Start: ms(t0.Add(time.Minute)), End: ms(t0.Add(2 * time.Minute)), Pending: 10},
		{Segment: "202501311559", Start: ms(t0.Add(time.Hour)), End: ms(t0.Add(time.Hour + time.Minute)), Pending: 3},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Backlog = %+v, want %+v", got, want)
	}
}

func TestPending(t *testing.T) {
	ctx := context.Background()
	ix, _, _ := newTestIndex(t, Config{Shards: 4})
	now := time.Now()
	own := Entry{ID: 1, ExecAt: ms(now.Add(time.Hour))}
	late := Entry{ID: 2, ExecAt: ms(now.Add(-time.Hour))} // lands in the segment of now
	if err := ix.Writer().Add(ctx, now, []Entry{own, late}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		e    Entry
		want bool
	}{
		{"own segment", own, true},
		{"moved to the segment of now", late, true},
		{"other exec_at", Entry{ID: 1, ExecAt: own.ExecAt + 1}, false},
		{"unknown id", Entry{ID: 3, ExecAt: own.ExecAt}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ix.Maintenance().Pending(ctx, tt.e)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Pending(%+v) = %v, want %v", tt.e, got, tt.want)
			}
		})
	}
	if err := ix.Reader().Remove(ctx, ix.Key(own), []Entry{own}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := ix.Maintenance().Pending(ctx, own); ok {
		t.Fatal("Pending after Remove")
	}
}

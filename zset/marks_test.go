package zset

import (
	"context"
	"testing"
)

func TestMarks(t *testing.T)          { testMarks(t, miniIndex) }
func TestRealRedisMarks(t *testing.T) { testMarks(t, realIndex) }

// The watermarks round-trip by field; a later write of a field replaces
// it and leaves the others; garbage in the hash is left out.
func testMarks(t *testing.T, newIndex newIndexFunc) {
	ix, c := newIndex(t, Config{})
	ctx := context.Background()
	if m, err := ix.Watermarks().Marks(ctx); err != nil || len(m) != 0 {
		t.Fatalf("empty: %v, %v", m, err)
	}
	if err := ix.Watermarks().SetMarks(ctx, map[string]int64{"delay-input/0": 1000, "delay-input/1": 2000}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Watermarks().SetMarks(ctx, map[string]int64{"delay-input/1": 3000}); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, ix.marksKey(), "junk", "x").Err(); err != nil {
		t.Fatal(err)
	}
	m, err := ix.Watermarks().Marks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["delay-input/0"] != 1000 || m["delay-input/1"] != 3000 {
		t.Fatalf("marks %v, want delay-input/0=1000 delay-input/1=3000", m)
	}
}

package zset

import (
	"math"
	"testing"
	"time"
)

func TestFlagOps(t *testing.T) {
	ix, m, _ := newTestIndex(t, Config{Prefix: "p"})
	ids := make([]uint64, 2500) // three pipelines
	for i := range ids {
		ids[i] = uint64(i * 2)
	}
	if err := ix.OpFlags().FlagOps(t.Context(), ids, time.Hour); err != nil {
		t.Fatal(err)
	}
	probe := []uint64{0, 1, 4998, 4999, 1 << 62}
	got, err := ix.OpFlags().Flagged(t.Context(), probe)
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, false, true, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Flagged(%d) = %v, want %v", probe[i], got[i], want[i])
		}
	}
	if ttl := m.TTL("p:op:4998"); ttl != time.Hour {
		t.Errorf("TTL %v, want 1h", ttl)
	}
	m.FastForward(2 * time.Hour)
	if got, _ := ix.OpFlags().Flagged(t.Context(), []uint64{0}); got[0] {
		t.Error("flag outlived its TTL")
	}
}

// TestFlagOpsTTLBounded: a flag always expires, also when its TTL comes
// from a maximum delay near the largest Duration (--max-delay 2562047h)
// or wrapped to a negative number on its way.
func TestFlagOpsTTLBounded(t *testing.T) {
	ix, m, _ := newTestIndex(t, Config{Prefix: "p"})
	for _, tt := range []struct {
		ttl, want time.Duration
	}{
		{2562047 * time.Hour, MaxFlagTTL},
		{math.MaxInt64, MaxFlagTTL},
		{-time.Hour, time.Second},
		{0, time.Second},
	} {
		if err := ix.OpFlags().FlagOps(t.Context(), []uint64{7}, tt.ttl); err != nil {
			t.Fatal(err)
		}
		if got := m.TTL("p:op:7"); got != tt.want {
			t.Errorf("FlagOps(ttl %v): TTL %v, want %v", tt.ttl, got, tt.want)
		}
	}
}

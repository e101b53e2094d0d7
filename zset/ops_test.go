package zset

import (
	"testing"
	"time"
)

func TestFlagOps(t *testing.T) {
	ix, m, _ := newTestIndex(t, Config{Prefix: "p"})
	ids := make([]uint64, 2500) // three pipelines
	for i := range ids {
		ids[i] = uint64(i * 2)
	}
	if err := ix.FlagOps(t.Context(), ids, time.Hour); err != nil {
		t.Fatal(err)
	}
	probe := []uint64{0, 1, 4998, 4999, 1 << 62}
	got, err := ix.Flagged(t.Context(), probe)
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
	if got, _ := ix.Flagged(t.Context(), []uint64{0}); got[0] {
		t.Error("flag outlived its TTL")
	}
}

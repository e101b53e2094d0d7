package repair

import (
	"testing"
	"time"
)

func TestSuspect(t *testing.T) {
	const old, fresh, zero = "aaaa", "bbbb", "0000000000000000000000000000000000000000"
	whole := Marker{ID: "g1", ReplID: old}
	tests := []struct {
		name string
		m    Marker
		r    Replication
		want bool
	}{
		{"whole, same master", whole, Replication{ID: old, ID2: zero}, false},
		{"whole, first seen (nothing recorded)", Marker{ID: "g1"}, Replication{ID: fresh, ID2: zero}, false},
		{"whole, no ids (miniredis)", whole, Replication{}, false},
		{"restarted from its files", whole, Replication{ID: fresh, ID2: zero}, true},
		{"replica promoted", whole, Replication{ID: fresh, ID2: old}, true},
		{"no generation (new, flushed)", Marker{}, Replication{ID: old, ID2: zero}, true},
		{"loss recorded, repair not done", Marker{ID: "g1", ReplID: old, Lost: 1}, Replication{ID: old, ID2: zero}, true},
		{"healed on the new master", Marker{ID: "g2", ReplID: fresh}, Replication{ID: fresh, ID2: zero}, false},
	}
	for _, tc := range tests {
		if got := Suspect(tc.m, tc.r); got != tc.want {
			t.Errorf("%s: Suspect = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestGuardHoldsUntilRepaired: a Guard holds from its start until a look
// finds the index whole, holds again once the index is flushed, and lets
// deliveries go once the watcher has repaired it; after its max hold it
// lets them go without a repair.
func TestGuardHoldsUntilRepaired(t *testing.T) {
	f := newFixture(t, 5)
	ctx := t.Context()
	m, c, zix := miniIndex(t, "g")
	w, err := NewWatcher(WatchConfig{Prefix: "g"}, c, f.store, zix.Repairer())
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(c, "g", time.Second, time.Hour, nil)
	now := time.Now().UnixMilli()
	held := func() bool { return g.Cutoff(now) < now }
	if !held() {
		t.Fatal("not held before its first look")
	}
	g.look(ctx)
	if !held() {
		t.Fatal("not held before the first repair (no generation)")
	}
	if ok, err := w.Check(ctx); err != nil || !ok {
		t.Fatalf("first check: repaired %v, %v", ok, err)
	}
	g.look(ctx)
	if held() {
		t.Fatal("held after the repair")
	}
	m.FlushAll()
	g.look(ctx)
	if !held() {
		t.Fatal("not held after FLUSHALL")
	}
	if ok, err := w.Check(ctx); err != nil || !ok {
		t.Fatalf("check after FLUSHALL: repaired %v, %v", ok, err)
	}
	g.look(ctx)
	if held() {
		t.Fatal("held after the repair of the flush")
	}
	m.SetError("down")
	g.look(ctx)
	if !held() {
		t.Fatal("not held while Redis does not answer")
	}
	m.SetError("")
	g.look(ctx)
	if held() {
		t.Fatal("held once Redis answers with the index whole")
	}

	short := NewGuard(c, "never-repaired", time.Second, time.Minute, nil)
	short.look(ctx)
	if got := short.Cutoff(now); got >= now {
		t.Fatalf("cutoff %d: not held without a generation", got)
	}
	if later := now + 2*time.Minute.Milliseconds(); short.Cutoff(later) != later {
		t.Error("still held after the max hold")
	}
}

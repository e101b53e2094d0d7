package topicctl

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/payload"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := New(rdb, Config{Prefix: "p", Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Controls sees this process's own changes at once (the cache is dropped
// on a write) and Of merges the pause of every topic.
func TestControls(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Controls(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRate(ctx, "orders", 50); err != nil {
		t.Fatal(err)
	}
	if err := s.SetExpireAfter(ctx, "orders", time.Minute); err != nil {
		t.Fatal(err)
	}
	sn, _ := s.Controls(ctx)
	if c := sn.Of("orders"); c.Rate != 50 || c.ExpireAfter != time.Minute || c.Paused || !c.Holds() {
		t.Fatalf("orders: %+v", c)
	}
	if err := s.Pause(ctx, All); err != nil {
		t.Fatal(err)
	}
	sn, _ = s.Controls(ctx)
	if !sn.Of("anything").Paused || !sn.Of("orders").Paused {
		t.Fatalf("pause all not seen: %+v", sn)
	}
	if err := s.Resume(ctx, All); err != nil {
		t.Fatal(err)
	}
	if sn, _ = s.Controls(ctx); sn.Of("orders").Paused {
		t.Fatal("still paused after resume all")
	}
	for _, bad := range []string{"", "delay-input", "__consumer_offsets", "a b"} {
		if err := s.Pause(ctx, bad); err == nil {
			t.Errorf("pause %q: no error", bad)
		}
	}
}

// Held tasks come back lowest exec_at first, up to until; Forget keeps a
// topic registered while it holds tasks.
func TestHeld(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	refs := []payload.Ref{{ID: 3, ExecAt: 300}, {ID: 1, ExecAt: 100}, {ID: 2, ExecAt: 200}, {ID: 1, ExecAt: 400}}
	if err := s.Hold(ctx, "orders", refs); err != nil {
		t.Fatal(err)
	}
	got, err := s.Held(ctx, "orders", 300, 10)
	if err != nil || len(got) != 3 || got[0].ExecAt != 100 || got[2].ExecAt != 300 {
		t.Fatalf("Held = %v, %v", got, err)
	}
	if err := s.Forget(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if ts, _ := s.HeldTopics(ctx); len(ts) != 1 {
		t.Fatalf("forgotten while holding: %v", ts)
	}
	if err := s.Release(ctx, "orders", refs); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if ts, _ := s.HeldTopics(ctx); len(ts) != 0 {
		t.Fatalf("not forgotten when empty: %v", ts)
	}
}

// The bucket starts full (a quarter of the rate) and refills at the rate;
// a lease has one owner until it lapses.
func TestBucketAndLease(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.UnixMilli(1_000_000)
	if n, _ := s.Take(ctx, "orders", 100, 1000, now); n != 25 {
		t.Fatalf("first take: %d, want 25", n)
	}
	if n, _ := s.Take(ctx, "orders", 100, 1000, now.Add(100*time.Millisecond)); n != 10 {
		t.Fatalf("after 100ms: %d, want 10", n)
	}
	if n, _ := s.Take(ctx, "orders", 100, 1000, now.Add(time.Hour)); n != 25 {
		t.Fatalf("after an hour: %d, want 25 (the bucket's size)", n)
	}
	if ok, _ := s.Lease(ctx, "orders", "a", time.Minute); !ok {
		t.Fatal("a did not get a free lease")
	}
	if ok, _ := s.Lease(ctx, "orders", "b", time.Minute); ok {
		t.Fatal("b got a's lease")
	}
	if ok, _ := s.Lease(ctx, "orders", "a", time.Minute); !ok {
		t.Fatal("a could not renew")
	}
	if ok, err := s.Renew(ctx, "orders", "a", time.Minute); !ok || err != nil {
		t.Fatalf("a could not extend its own lease: %v %v", ok, err)
	}
	if ok, _ := s.Renew(ctx, "orders", "b", time.Minute); ok {
		t.Fatal("b extended a's lease")
	}
	if ok, _ := s.Renew(ctx, "invoices", "a", time.Minute); ok {
		t.Fatal("Renew took a lease nobody held")
	}
}

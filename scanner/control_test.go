package scanner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topicctl"
	"github.com/delayq/delayq/topics"
	"github.com/delayq/delayq/zset"
)

func newControls(t *testing.T) *topicctl.Store {
	t.Helper()
	c, _ := newControlsOn(t)
	return c
}

// newControlsOn is newControls with its miniredis.
func newControlsOn(t *testing.T) (*topicctl.Store, *miniredis.Miniredis) {
	t.Helper()
	mr := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	c, err := topicctl.New(client, topicctl.Config{Prefix: "t", Refresh: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c, mr
}

// heldEnv is an env whose 20 tasks of topic orders, due a second ago, are
// held (paused) and then resumed: the releaser's next round writes them.
func heldEnv(t *testing.T) (*env, *topicctl.Store, *miniredis.Miniredis) {
	t.Helper()
	ctx := context.Background()
	c, mr := newControlsOn(t)
	e := newEnv(t, Config{Controls: c})
	at := time.Now().Add(-time.Second).UnixMilli()
	e.put("z", tasks(20, "orders", at))
	if err := c.Pause(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	e.scan(ctx, scantask.Task{Zset: "z", Until: at + 100})
	if err := c.Resume(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	return e, c, mr
}

// A round whose writes outlast the topic lease's TTL (a loaded machine,
// a slow broker) keeps its lease and releases what it delivered: the next
// round delivers nothing again. With a lease that lapsed mid-round, the
// release was refused and every round delivered the same tasks again.
func TestSlowRoundKeepsItsLease(t *testing.T) {
	ctx := context.Background()
	e, c, _ := heldEnv(t)
	e.w.mu.Lock()
	e.w.delay = leaseTTL + leaseTTL/2
	e.w.mu.Unlock()
	if err := e.rel().round(ctx); err != nil {
		t.Fatalf("a slow round: %v", err)
	}
	if err := e.rel().round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.byTopic("orders")); n != 20 {
		t.Fatalf("%d deliveries of 20 held tasks, want each once", n)
	}
	if st, _, err := c.List(ctx); err != nil || len(st) > 1 || len(st) == 1 && st[0].Held != 0 {
		t.Fatalf("after the slow round: %+v %v, want nothing held", st, err)
	}
}

// A lease that passes to another releaser during a round (this one was
// paused, or its renewals failed past the TTL) fences the round's writes:
// it releases nothing, and the round ends with a refusal.
func TestLostLeaseFencesTheRound(t *testing.T) {
	ctx := context.Background()
	e, c, mr := heldEnv(t)
	e.w.mu.Lock()
	e.w.delay = leaseTTL
	e.w.mu.Unlock()
	go func() {
		time.Sleep(leaseTTL / 8) // the round holds the lease and is writing
		for _, k := range mr.Keys() {
			if strings.Contains(k, "lease") {
				mr.Del(k)
			}
		}
		if ok, err := c.Lease(ctx, "orders", "other", time.Minute); !ok || err != nil {
			t.Errorf("the other releaser did not get the lease: %v %v", ok, err)
		}
	}()
	if err := e.rel().round(ctx); !isFenced(err) {
		t.Fatalf("a round whose lease passed on: %v, want a fenced write", err)
	}
	if st, _, err := c.List(ctx); err != nil || len(st) != 1 || st[0].Held != 20 {
		t.Fatalf("after the fenced round: %+v %v, want the 20 still held", st, err)
	}
}

// A paused topic's due tasks are held, not delivered, failed or lost,
// while another topic in the same zset is delivered; after resume the
// releaser delivers the held ones in due order, and a cancel of a held
// task still wins.
func TestPauseHoldsAndResumeReleasesInOrder(t *testing.T) {
	ctx := context.Background()
	c := newControls(t)
	e := newEnv(t, Config{Controls: c})
	at := time.Now().Add(-time.Second).UnixMilli()
	e.put("z", append(tasks(20, "orders", at), task("other", "mail", at)))
	if err := c.Pause(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	e.scan(ctx, scantask.Task{Zset: "z", Until: at + 100})
	if n := len(e.byTopic("orders")); n != 0 {
		t.Fatalf("%d tasks of the paused topic delivered", n)
	}
	if n := len(e.byTopic("mail")); n != 1 {
		t.Fatalf("other topic: %d delivered, want 1", n)
	}
	if n := len(e.ix.pending("z")); n != 0 {
		t.Fatalf("%d entries left in the index, want 0 (held instead)", n)
	}
	st, _, err := c.List(ctx)
	if err != nil || len(st) != 1 || st[0].Held != 20 || !st[0].Control.Paused {
		t.Fatalf("List = %+v, %v; want orders paused with 20 held", st, err)
	}
	if err := e.rel().round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.byTopic("orders")); n != 0 {
		t.Fatalf("%d released while paused", n)
	}
	if err := e.rel().gauge(ctx); err != nil {
		t.Fatal(err)
	}
	if p, h := value(e.s.cm.paused), value(e.s.cm.heldTopics); p != 1 || h != 20 {
		t.Errorf("gauges: paused %v, held %v; want 1 and 20", p, h)
	}
	cancelled := task("task-3", "orders", at+3)
	cancelled.Cancel = true
	if err := e.store.Put(ctx, []payload.Task{cancelled}); err != nil {
		t.Fatal(err)
	}
	if err := c.Resume(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := e.rel().round(ctx); err != nil {
		t.Fatal(err)
	}
	got := e.byTopic("orders")
	var ats []string
	for _, m := range got {
		v, _ := header(m, payload.HeaderAt)
		ats = append(ats, v)
		if n, _ := header(m, payload.HeaderID); n == "task-3" {
			t.Error("the cancelled held task was delivered")
		}
	}
	if len(got) != 19 || !slices.IsSorted(ats) {
		t.Fatalf("released %d (want 19) in order %v", len(got), ats)
	}
	if v := value(e.s.cm.lateness); v != 19 {
		t.Errorf("held lateness observed %v times, want 19", v)
	}
	if v := value(e.s.m.lateness); v != 1 {
		t.Errorf("lateness observed %v times, want 1 (the other topic)", v)
	}
	st, _, _ = c.List(ctx)
	if len(st) != 1 || st[0].Held != 0 {
		t.Fatalf("after release: %+v", st)
	}
}

// A rate-limited topic is released from its bucket: a first round gives
// a quarter of the rate (the bucket's burst), and then the rate.
func TestRateLimitsRelease(t *testing.T) {
	ctx := context.Background()
	c := newControls(t)
	e := newEnv(t, Config{Controls: c})
	at := time.Now().Add(-time.Second).UnixMilli()
	e.put("z", tasks(100, "orders", at))
	if err := c.SetRate(ctx, "orders", 100); err != nil {
		t.Fatal(err)
	}
	e.scan(ctx, scantask.Task{Zset: "z", Until: at + 100})
	round := func() (n int, began, ended time.Time) {
		t.Helper()
		before := len(e.byTopic("orders"))
		began = time.Now()
		if err := e.rel().round(ctx); err != nil {
			t.Fatal(err)
		}
		return len(e.byTopic("orders")) - before, began, time.Now()
	}
	if n, _, _ := round(); n != 25 {
		t.Fatalf("first round: %d delivered, want the burst of 25", n)
	}
	// The bucket refills at 100/s between the two rounds' takes, each made
	// somewhere within its round: on a loaded machine a round takes long.
	_, began1, ended1 := round() // empties the bucket
	time.Sleep(100 * time.Millisecond)
	n, began, ended := round()
	lo, hi := int(began.Sub(ended1).Seconds()*100)-1, min(25, int(ended.Sub(began1).Seconds()*100)+1)
	if n < lo || n > hi {
		t.Fatalf("%v after an emptied bucket: %d delivered, want %d to %d (100/s)", began.Sub(ended1).Round(time.Millisecond), n, lo, hi)
	}
	time.Sleep(time.Second)
	if n, _, _ := round(); n != 25 {
		t.Fatalf("after a second more: %d delivered, want 25 (the bucket holds 25)", n)
	}
}

// A held task waits for the tasks due before it that are still in the
// index (another zset's step has not held them yet): the releaser never
// overtakes them, and releases all in due order once they are held. An
// entry due longer ago than orderWait (parked, say) does not hold it back.
func TestReleaseWaitsForEarlierEntries(t *testing.T) {
	ctx := context.Background()
	c := newControls(t)
	e := newEnv(t, Config{Controls: c})
	at := time.Now().Add(-time.Second).UnixMilli()
	e.put("late", tasks(10, "orders", at))
	early := task("early", "orders", at-300)
	e.put("early", []payload.Task{early})
	if err := c.SetRate(ctx, "orders", 10_000); err != nil {
		t.Fatal(err)
	}
	round := func() {
		t.Helper()
		e.rel().fenceNext = time.Time{} // read the fence again
		if err := e.rel().round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	e.scan(ctx, scantask.Task{Zset: "late", Until: at + 100})
	round()
	if n := len(e.byTopic("orders")); n != 0 {
		t.Fatalf("%d released before the earlier task still in the index", n)
	}
	e.scan(ctx, scantask.Task{Zset: "early", Until: at + 100})
	round()
	var ats []int64
	for _, m := range e.byTopic("orders") {
		v, _ := header(m, payload.HeaderAt)
		d, _ := time.Parse(time.RFC3339Nano, v)
		ats = append(ats, d.UnixMilli())
	}
	if len(ats) != 11 || ats[0] != early.ExecAt || !slices.IsSorted(ats) {
		t.Fatalf("released %v, want 11 in due order, the earlier task first", ats)
	}

	stuck := task("stuck", "mail", time.Now().Add(-orderWait-time.Second).UnixMilli())
	e.ix.add("parked", zset.Entry{ID: stuck.ID, ExecAt: stuck.ExecAt})
	e.put("again", tasks(5, "orders", at+1000))
	e.scan(ctx, scantask.Task{Zset: "again", Until: at + 2000})
	round()
	if n := len(e.byTopic("orders")); n != 16 {
		t.Fatalf("%d released, want 16: an entry due more than orderWait ago holds nothing back", n)
	}
}

// A task later than its delay-expire-after, or its topic's default,
// goes to the failed topic with reason "expired" and its headers.
func TestExpiredGoesToFailed(t *testing.T) {
	ctx := context.Background()
	c := newControls(t)
	e := newEnv(t, Config{Controls: c})
	at := time.Now().Add(-10 * time.Second).UnixMilli()
	late := task("late", "orders", at)
	late.Headers = append(late.Headers, payload.Header{Key: payload.HeaderExpireAfter, Value: []byte("5s")})
	fresh := task("fresh", "orders", at)
	fresh.Headers = append(fresh.Headers, payload.Header{Key: payload.HeaderExpireAfter, Value: []byte("1m")})
	byTopic := task("default", "mail", at)
	if err := c.SetExpireAfter(ctx, "mail", time.Second); err != nil {
		t.Fatal(err)
	}
	e.put("z", []payload.Task{late, fresh, byTopic})
	e.scan(ctx, scantask.Task{Zset: "z", Until: at})
	failed := e.byTopic(topics.Failed)
	if len(failed) != 2 || len(e.byTopic("orders")) != 1 {
		t.Fatalf("failed %d (want 2), delivered %d (want 1)", len(failed), len(e.byTopic("orders")))
	}
	for _, m := range failed {
		if v, _ := header(m, payload.HeaderError); v != ReasonExpired {
			t.Errorf("delay-error %q, want %q", v, ReasonExpired)
		}
		if v, _ := header(m, "trace"); v != "x" {
			t.Errorf("original header lost: %v", m.Headers)
		}
	}
	if v := value(e.s.m.failed); v != 2 {
		t.Errorf("failed counted %v, want 2", v)
	}
}

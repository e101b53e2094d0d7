package ingest

import (
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
	"github.com/delayq/delayq/zset"
)

// backlogStore is what the backlog test reads and ingest writes.
type backlogStore interface {
	Store
	find.Scanner
}

// The index's pending count (what delayq_pending_tasks, delayctl backlog
// and the console report: zset's Backlog) equals the tasks really pending
// (GET /v1/tasks?state=pending: find.List; GET /v1/tasks/{id}:
// payload.State) after submits, cancels by id and due time after, before
// and in the batch of their task, a cancel by id alone, a reschedule and a
// replace; and again after the whole input is handled a second time (a
// crash's re-read).
func TestBacklogCountsPending(t *testing.T) {
	t.Run("miniredis and the memory store", func(t *testing.T) {
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { rdb.Close() })
		ix, err := zset.New(rdb, zset.Config{Prefix: "bl"})
		if err != nil {
			t.Fatal(err)
		}
		testBacklogCountsPending(t, payload.NewMemory(), ix)
	})
	t.Run("real stack", func(t *testing.T) {
		if testing.Short() {
			t.Skip("short")
		}
		s := newRealStack(t, t.Context())
		testBacklogCountsPending(t, s.store, s.ix)
	})
}

func testBacklogCountsPending(t *testing.T, st backlogStore, ix *zset.Index) {
	ctx := t.Context()
	in, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Registerer: prometheus.NewRegistry(),
		RescheduleGrace: time.Second, Logger: slog.New(slog.DiscardHandler)}, st, roles(ix), &fakeWriter{ev: &events{}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// Every task in one one-minute segment, so a reschedule and a replace
	// stay in their zset (the "<id>@<score>" form; see zset.Forget).
	base := now.Add(time.Hour).Truncate(time.Minute)
	at := func(sec int) string {
		return strconv.FormatInt(base.Add(time.Duration(sec)*time.Second).UnixMilli(), 10)
	}
	var off int64
	m := func(kv ...string) payload.Message {
		off++
		msg := msg(int(off%3), off, kv...)
		msg.Time = now.Add(time.Duration(off) * time.Millisecond) // record times in input order
		return msg
	}
	topic := "bl-" + strconv.FormatInt(now.UnixNano(), 36)
	submit := func(id string, sec int) payload.Message {
		return m(payload.HeaderTopic, topic, payload.HeaderID, id, payload.HeaderAt, at(sec))
	}
	cancelAt := func(id string, sec int) payload.Message {
		return m(payload.HeaderOp, payload.OpCancel, payload.HeaderID, id, payload.HeaderAt, at(sec))
	}
	batches := [][]payload.Message{
		{cancelAt("before", 20)}, // before its task, another batch
		{submit("p1", 10), submit("p2", 11), submit("p3", 12), submit("after", 13), submit("before", 20),
			submit("same", 14), cancelAt("same", 14), submit("byid", 15), submit("moved", 16), submit("replaced", 17)},
		{cancelAt("after", 13), m(payload.HeaderOp, payload.OpCancel, payload.HeaderID, "byid"),
			m(payload.HeaderOp, payload.OpReschedule, payload.HeaderID, "moved", payload.HeaderAt, at(40)),
			m(payload.HeaderOp, payload.OpReplace, payload.HeaderTopic, topic, payload.HeaderID, "replaced", payload.HeaderAt, at(50))},
	}
	want := map[string]payload.Phase{
		"p1": payload.PhasePending, "p2": payload.PhasePending, "p3": payload.PhasePending,
		"moved": payload.PhasePending, "replaced": payload.PhasePending,
		"after": payload.PhaseCancelled, "before": payload.PhaseCancelled, "same": payload.PhaseCancelled, "byid": payload.PhaseCancelled,
	}
	pending := 0
	for _, p := range want {
		if p == payload.PhasePending {
			pending++
		}
	}
	check := func(t *testing.T) {
		t.Helper()
		for name, p := range want {
			got, err := payload.State(ctx, st, name, time.Now())
			if err != nil || got.Phase != p {
				t.Errorf("State(%s) = %+v, %v; want %s", name, got, err, p)
			}
		}
		page, err := find.List(ctx, st, find.Query{Topic: topic, From: base.UnixMilli(), To: base.Add(time.Minute).UnixMilli(), Limit: 100}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Tasks) != pending {
			t.Errorf("find.List state=pending: %d tasks, want %d", len(page.Tasks), pending)
		}
		segs, err := ix.Maintenance().Backlog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, s := range segs {
			n += s.Pending
		}
		if n != int64(pending) {
			t.Errorf("backlog counts %d, want the %d tasks pending", n, pending)
		}
	}
	for _, b := range batches {
		if err := in.handle(ctx, b, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	check(t)
	// after, before, same, byid, the old rows of moved and replaced.
	if got := testutil.ToFloat64(in.m.cancelled); got != 6 {
		t.Errorf("delayq_tasks_cancelled_total = %v, want 6", got)
	}
	for _, b := range batches { // a re-read after a crash changes nothing
		if err := in.handle(ctx, b, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	check(t)
	// The re-read indexes the cancelled submits again and forgets them
	// again: the counter counts those removals a second time.
	if got := testutil.ToFloat64(in.m.cancelled); got < 6 || got > 12 {
		t.Errorf("delayq_tasks_cancelled_total after the re-read = %v, want 6 to 12", got)
	}
}

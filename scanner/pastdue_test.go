package scanner

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delayq/delayq/kafka/scantask"
)

// A task submitted with a due time already past is delivered and counted
// apart: it does not move the lateness histogram (issue 29: one task "at
// 2000-01-01" made p99 an hour and fired the lateness alerts).
func TestPastDueCountedApart(t *testing.T) {
	e := newEnv(t, Config{})
	base := e.now.Add(-time.Minute).UnixMilli()
	ts := tasks(3, "orders", base)
	ts[1].PastDue = true
	e.put("z", ts)
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if got := len(e.byTopic("orders")); got != 3 {
		t.Fatalf("delivered %d, want 3", got)
	}
	if d, l, p := value(e.s.m.delivered), value(e.s.m.lateness), value(e.s.m.pastDue); d != 3 || l != 2 || p != 1 {
		t.Errorf("delivered %v, lateness observations %v, past due %v; want 3, 2, 1", d, l, p)
	}
}

// The refusal series exist at 0 before the first refusal, so that
// increase() in DelayqDeliveryRefused sees the first one.
func TestRefusalSeriesPrecreated(t *testing.T) {
	e := newEnv(t, Config{})
	if n := testutil.CollectAndCount(e.s.m.failed); n != 2 {
		t.Errorf("delayq_tasks_failed_total has %d series before any failure, want 2 (refused, undeliverable)", n)
	}
	for _, r := range []string{reasonRefused, reasonUndeliverable} {
		if v := testutil.ToFloat64(e.s.m.failed.WithLabelValues(r)); v != 0 {
			t.Errorf("failed{reason=%q} = %v, want 0", r, v)
		}
	}
}

package scanner

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// panicStore is the in-memory store with a bug: Get panics for any call
// that asks for the row of id boom.
type panicStore struct {
	*payload.Memory
	boom uint64
}

func (s panicStore) Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error) {
	for _, r := range refs {
		if r.ID == s.boom {
			panic("bug: cannot read row " + strconv.FormatUint(r.ID, 10))
		}
	}
	return s.Memory.Get(ctx, refs)
}

// TestPanicGoesToFailed: a task whose handling panics (the store's Get of
// its row, here) goes to the failed topic with reason "internal error" and
// an ERROR line naming it; the other tasks of its step are delivered, its
// entry leaves the zset, and the worker goes on with the next scan task.
func TestPanicGoesToFailed(t *testing.T) {
	e := newEnv(t, Config{})
	now := time.Now()
	ts := tasks(10, "orders", now.Add(-time.Second).UnixMilli())
	boom := ts[4]
	e.s.store = panicStore{Memory: e.store, boom: boom.ID}
	e.put("z", ts)
	e.put("z2", []payload.Task{task("later", "orders", now.Add(-time.Second).UnixMilli())})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	e.scan(ctx, scantask.Task{Zset: "z", Until: now.UnixMilli()}, scantask.Task{Zset: "z2", Until: now.UnixMilli()})

	if got := len(e.byTopic("orders")); got != 10 {
		t.Errorf("%d tasks delivered, want 10 (9 of z, 1 of z2)", got)
	}
	failed := e.byTopic(topics.Failed)
	if len(failed) != 1 {
		t.Fatalf("%d messages in the failed topic, want 1", len(failed))
	}
	reason, _ := header(failed[0], payload.HeaderError)
	id, _ := header(failed[0], payload.HeaderID)
	if reason != ReasonInternal || id != strconv.FormatUint(boom.ID, 10) {
		t.Errorf("failed message: delay-error %q, delay-id %q; want %q, %d", reason, id, ReasonInternal, boom.ID)
	}
	if left := e.ix.zsets["z"]; len(left) != 0 {
		t.Errorf("entries left in z: %v", left)
	}
	if v := value(e.s.m.failed.WithLabelValues(reasonInternal)); v != 1 {
		t.Errorf("failed_total{reason=internal} = %v, want 1", v)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "panic while handling a task") || !strings.Contains(logs, "id="+strconv.FormatUint(boom.ID, 10)) {
		t.Errorf("no ERROR line naming the task:\n%s", logs)
	}
}

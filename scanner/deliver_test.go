package scanner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
	"github.com/delayq/delayq/zset"
)

// dialError is what kafka-go answers while the brokers are unreachable.
var dialError = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// TestDeliversDue runs a scan task on the Redis index (miniredis): the due
// entries up to until are delivered with their key, value and headers and
// removed, the later ones stay.
func TestDeliversDue(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ix, err := zset.New(rdb, zset.Config{Prefix: "test", Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, single := &fakeWriter{}, &fakeWriter{}
	reg := prometheus.NewRegistry()
	s, err := New(Config{Brokers: []string{"b"}, SingleWriter: single, Registerer: reg}, roles(ix), payload.NewMemory(), w)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	base := now.Add(-time.Minute).UnixMilli()
	ts := tasks(5, "orders", base) // ExecAt base .. base+4
	var entries []zset.Entry
	for _, tk := range ts {
		entries = append(entries, zset.Entry{ID: tk.ID, ExecAt: tk.ExecAt})
	}
	if err := s.store.Put(ctx, ts); err != nil { // ctx carries no fence
		t.Fatal(err)
	}
	if err := ix.Writer().Add(ctx, now, entries); err != nil {
		t.Fatal(err)
	}
	keys, err := ix.Reader().DueKeys(ctx, now.UnixMilli())
	if err != nil || len(keys) != 1 {
		t.Fatalf("DueKeys = %v, %v; want one key", keys, err)
	}
	e := &env{t: t, w: w, single: single, s: s}

	// until = base+2: tasks 0..2 are due, 3 and 4 are not.
	e.scan(ctx, scantask.Task{Zset: keys[0], Until: base + 2})
	got := e.byTopic("orders")
	if len(got) != 3 {
		t.Fatalf("delivered %d messages, want 3", len(got))
	}
	for i, m := range got {
		tk := ts[i]
		if string(m.Key) != string(tk.Key) || string(m.Value) != string(tk.Value) {
			t.Errorf("message %d: key %q value %q, want %q %q", i, m.Key, m.Value, tk.Key, tk.Value)
		}
		if id, _ := header(m, payload.HeaderID); id != tk.Name {
			t.Errorf("message %d: delay-id %q, want %q", i, id, tk.Name)
		}
		if at, _ := header(m, payload.HeaderAt); at != payload.FormatTime(tk.ExecAt) {
			t.Errorf("message %d: delay-at %q, want %q", i, at, payload.FormatTime(tk.ExecAt))
		}
		if v, _ := header(m, "trace"); v != "x" {
			t.Errorf("message %d: pass-through header lost: %v", i, m.Headers)
		}
		if m.Time.IsZero() {
			t.Errorf("message %d without a timestamp", i)
		}
	}
	rest, err := ix.Reader().Due(ctx, keys[0], 1<<52, 100)
	if err != nil || len(rest) != 2 || rest[0].ID != ts[3].ID || rest[1].ID != ts[4].ID {
		t.Errorf("pending after scan = %v, %v; want tasks 3 and 4", rest, err)
	}
	if v := value(s.m.delivered); v != 3 {
		t.Errorf("delivered_total = %v, want 3", v)
	}
	if v := value(s.m.lateness); v != 3 {
		t.Errorf("lateness observations = %v, want 3", v)
	}
	if v := value(s.m.scanTasks); v != 1 {
		t.Errorf("scan_tasks_total = %v, want 1", v)
	}
}

// Cancelled and missing entries are removed without a message; each
// missing row is logged at WARN with its id and due time (issue 11, item
// 5), and counted.
func TestSkipsCancelledAndMissing(t *testing.T) {
	e := newEnv(t, Config{})
	base := e.now.Add(-time.Minute).UnixMilli()
	ts := tasks(3, "orders", base)
	cancel := ts[1]
	cancel.Cancel, cancel.Key, cancel.Value, cancel.Headers, cancel.Topic = true, nil, nil, nil, ""
	e.put("z", append(slices.Clone(ts), cancel), zset.Entry{ID: 42, ExecAt: base})

	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if got, want := names(e.byTopic("orders")), []string{"task-0", "task-2"}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("pending after scan = %v, want none (cancelled and missing removed too)", rest)
	}
	if c, m := value(e.s.m.cancelled), value(e.s.m.missing); c != 1 || m != 1 {
		t.Errorf("cancelled, missing = %v, %v; want 1, 1", c, m)
	}
	logs := e.logs.String()
	want := fmt.Sprintf(`level=WARN msg="task row missing, entry removed" component=scanner zset=z id=42 exec_at=%s`,
		time.UnixMilli(base).UTC().Format(time.RFC3339Nano))
	if !strings.Contains(logs, want) {
		t.Errorf("logs lack %q:\n%s", want, logs)
	}
}

// A flood of missing rows is logged at missingLogRate lines a second, the
// rest counted in the next line; the metric counts them all.
func TestMissingRowsRateLimited(t *testing.T) {
	e := newEnv(t, Config{})
	base := e.now.Add(-time.Minute).UnixMilli()
	var rowless []zset.Entry
	for i := range 50 {
		rowless = append(rowless, zset.Entry{ID: uint64(1000 + i), ExecAt: base + int64(i)})
	}
	e.put("z", nil, rowless...)
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if m := value(e.s.m.missing); m != 50 {
		t.Errorf("missing_total = %v, want 50", m)
	}
	if n := strings.Count(e.logs.String(), "task row missing"); n < missingLogRate || n > 2*missingLogRate {
		t.Errorf("%d WARN lines for 50 missing rows within a second or two, want %d to %d", n, missingLogRate, 2*missingLogRate)
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter(2)
	at := time.Unix(100, 0)
	for i, want := range []bool{true, true, false, false} {
		if ok, _ := l.allow(at); ok != want {
			t.Errorf("event %d: allowed %v, want %v", i, ok, want)
		}
	}
	ok, suppressed := l.allow(at.Add(time.Second))
	if !ok || suppressed != 2 {
		t.Errorf("next second: allowed %v with %d suppressed, want true with 2", ok, suppressed)
	}
}

// While Kafka is unreachable the stage stalls: the write is retried, the
// entries stay, nothing goes to the failed topic, and the stall is one
// WARN line and the stage gauge (issue 10).
func TestKafkaDownStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Config{MaxAttempts: 1})
		e.fail(func([]kafka.Message) error { return dialError })
		ts := tasks(4, "orders", e.now.Add(-time.Minute).UnixMilli())
		missing := zset.Entry{ID: 7, ExecAt: ts[0].ExecAt}
		e.put("z", ts, missing)

		ctx, stop := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Second, stop)
		e.scan(ctx, scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
		if n := e.w.callCount(); n < 1000 {
			t.Errorf("%d writes in 10s of outage, want retries every few ms", n)
		}
		// The missing entry needs no write and may go; every task entry stays.
		if rest := e.ix.pending("z"); len(rest) != len(ts) {
			t.Fatalf("pending after the outage = %v, want the %d task entries", rest, len(ts))
		}
		if n := len(e.byTopic(topics.Failed)); n != 0 {
			t.Errorf("%d tasks sent to the failed topic during an outage", n)
		}
		if v := value(e.s.m.delivered); v != 0 {
			t.Errorf("delivered_total = %v, want 0", v)
		}
		if n := strings.Count(e.logs.String(), "stage stalled"); n != 1 {
			t.Errorf("%d stall lines, want 1:\n%s", n, e.logs.String())
		}
	})
}

// When some messages of a write fail (a leader moved), the others are
// settled and the failed ones are written again alone.
func TestPartialWriteRetriedAlone(t *testing.T) {
	e := newEnv(t, Config{})
	first := true
	e.fail(func(msgs []kafka.Message) error {
		if !first {
			return nil
		}
		first = false
		werrs := make(kafka.WriteErrors, len(msgs))
		werrs[1] = kafka.NotLeaderForPartition
		return werrs
	})
	ts := tasks(3, "orders", e.now.Add(-time.Minute).UnixMilli())
	e.put("z", ts)
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if len(e.w.calls) != 1 || len(e.single.calls) != 1 {
		t.Fatalf("batch writes %d, alone writes %d; want 1 and 1", len(e.w.calls), len(e.single.calls))
	}
	if id, _ := header(e.single.calls[0][0], payload.HeaderID); id != "task-1" {
		t.Errorf("wrote %q alone, want task-1", id)
	}
	if got := names(e.byTopic("orders")); !slices.Equal(got, []string{"task-0", "task-1", "task-2"}) {
		t.Errorf("delivered %v, want each of 3 once", got)
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("pending = %v, want none", rest)
	}
	if v := value(e.s.m.parked); v != 0 {
		t.Errorf("parked gauge = %v, want 0", v)
	}
}

func TestLoopsOverBatches(t *testing.T) {
	e := newEnv(t, Config{BatchSize: 10})
	ts := tasks(35, "orders", e.now.Add(-time.Minute).UnixMilli())
	e.put("z", ts)
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if len(e.w.calls) != 4 {
		t.Errorf("writer calls = %d, want 4 (10+10+10+5)", len(e.w.calls))
	}
	seen := map[string]int{}
	for _, id := range names(e.byTopic("orders")) {
		seen[id]++
	}
	for _, tk := range ts {
		if seen[tk.Name] != 1 {
			t.Errorf("%s delivered %d times", tk.Name, seen[tk.Name])
		}
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("pending = %d entries, want none", len(rest))
	}
}

func TestExactBatchMultiple(t *testing.T) {
	e := newEnv(t, Config{BatchSize: 5})
	e.put("z", tasks(10, "orders", e.now.Add(-time.Minute).UnixMilli()))
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if n := len(e.byTopic("orders")); n != 10 {
		t.Errorf("delivered %d, want 10", n)
	}
}

// unknownTopic answers like kafka-go when a call names a topic the brokers
// do not know: the whole call fails, nothing is written.
func unknownTopic(topic string) broker {
	return func(msgs []kafka.Message) error {
		for _, m := range msgs {
			if m.Topic == topic {
				return kafka.UnknownTopicOrPartition
			}
		}
		return nil
	}
}

func TestRoutesRefusedToFailed(t *testing.T) {
	cases := []struct {
		name    string
		fail    broker
		reason  string // substring of delay-error
		attempt int    // alone writes of the bad message expected at least
	}{
		{
			name:    "unknown topic",
			fail:    unknownTopic("nope"),
			reason:  "Unknown Topic Or Partition",
			attempt: 3,
		},
		{
			name: "invalid topic per message",
			fail: func(msgs []kafka.Message) error {
				werrs := make(kafka.WriteErrors, len(msgs))
				bad := false
				for i, m := range msgs {
					if m.Topic == "nope" {
						werrs[i], bad = kafka.InvalidTopic, true
					}
				}
				if bad {
					return werrs
				}
				return nil
			},
			reason:  "Invalid Topic",
			attempt: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{MaxAttempts: 3})
			e.fail(tc.fail)
			base := e.now.Add(-time.Minute).UnixMilli()
			good := tasks(3, "orders", base)
			bad := task("bad", "nope", base+10)
			e.put("z", append(good, bad))

			e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
			if n := len(e.byTopic("orders")); n != 3 {
				t.Errorf("delivered %d good tasks, want 3", n)
			}
			failed := e.byTopic(topics.Failed)
			if len(failed) != 1 {
				t.Fatalf("failed topic got %d messages, want 1", len(failed))
			}
			m := failed[0]
			if string(m.Value) != "v-bad" || string(m.Key) != "k-bad" {
				t.Errorf("failed message key %q value %q, want the original", m.Key, m.Value)
			}
			if v, _ := header(m, payload.HeaderTopic); v != "nope" {
				t.Errorf("failed delay-topic = %q, want nope", v)
			}
			if v, _ := header(m, payload.HeaderError); !strings.Contains(v, tc.reason) {
				t.Errorf("failed delay-error = %q, want it to contain %q", v, tc.reason)
			}
			if v, _ := header(m, payload.HeaderID); v != "bad" {
				t.Errorf("failed delay-id = %q, want bad", v)
			}
			var alone int
			for _, c := range e.single.calls {
				if len(c) != 1 {
					t.Errorf("alone write of %d messages", len(c))
				}
				if c[0].Topic == "nope" {
					alone++
				}
			}
			if alone < tc.attempt {
				t.Errorf("bad message written alone %d times, want >= %d", alone, tc.attempt)
			}
			if rest := e.ix.pending("z"); len(rest) != 0 {
				t.Errorf("pending = %v, want none", rest)
			}
			if v := value(e.s.m.failed); v != 1 {
				t.Errorf("tasks_failed_total = %v, want 1", v)
			}
		})
	}
}

// kafka-go gives every message of a partition batch the batch's error: a
// broker refusing the batch as too large (a topic's max.message.bytes
// below the writer's limit) must not send the batch's valid messages to
// the failed topic (issue 11, item 2).
func TestBatchTooLargeJudgedAlone(t *testing.T) {
	e := newEnv(t, Config{})
	const limit = 1000 // the topic's max.message.bytes
	e.fail(func(msgs []kafka.Message) error {
		size := 0
		for _, m := range msgs {
			size += len(m.Value)
		}
		if size <= limit {
			return nil
		}
		werrs := make(kafka.WriteErrors, len(msgs))
		for i := range werrs {
			werrs[i] = kafka.MessageSizeTooLarge
		}
		return werrs
	})
	base := e.now.Add(-time.Minute).UnixMilli()
	ts := tasks(40, "orders", base)
	for i := range ts {
		ts[i].Value = make([]byte, 100)
	}
	ts[7].Value = make([]byte, 2*limit)
	e.put("z", ts)
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})

	if n := len(e.byTopic("orders")); n != 39 {
		t.Errorf("delivered %d, want the 39 that fit", n)
	}
	failed := e.byTopic(topics.Failed)
	if got := names(failed); !slices.Equal(got, []string{"task-7"}) {
		t.Errorf("failed topic got %v, want task-7 alone", got)
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("pending = %v, want none", rest)
	}
}

func TestStripsWhatFailedTopicRefuses(t *testing.T) {
	e := newEnv(t, Config{})
	e.fail(func(msgs []kafka.Message) error {
		for i, m := range msgs {
			if len(m.Value) > 100 {
				rest := slices.Delete(slices.Clone(msgs), i, i+1)
				return kafka.MessageTooLargeError{Message: m, Remaining: rest}
			}
		}
		return nil
	})
	base := e.now.Add(-time.Minute).UnixMilli()
	big := task("big", "orders", base)
	big.Value = make([]byte, 1000)
	e.put("z", []payload.Task{big, task("small", "orders", base+1)})
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if got := names(e.byTopic("orders")); !slices.Equal(got, []string{"small"}) {
		t.Errorf("delivered %v, want the small one", got)
	}
	failed := e.byTopic(topics.Failed)
	if len(failed) != 1 || failed[0].Value != nil {
		t.Fatalf("failed topic got %v, want one stripped record", failed)
	}
	if v, _ := header(failed[0], payload.HeaderError); !strings.Contains(v, "dropped") {
		t.Errorf("delay-error = %q", v)
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("pending = %v, want none", rest)
	}
}

// A task without a business topic, or for an internal one, goes to the
// failed topic with the batch.
func TestRedirectsBadTopics(t *testing.T) {
	e := newEnv(t, Config{})
	base := e.now.Add(-time.Minute).UnixMilli()
	e.put("z", []payload.Task{task("none", "", base), task("internal", topics.Scan, base+1), task("ok", "orders", base+2)})
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if got := names(e.byTopic(topics.Failed)); !slices.Equal(got, []string{"internal", "none"}) {
		t.Errorf("failed topic got %v", got)
	}
	if got := names(e.byTopic("orders")); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("orders got %v", got)
	}
}

func TestRetriesRedis(t *testing.T) {
	e := newEnv(t, Config{})
	e.ix.failDue, e.ix.failRemove = 2, 2
	e.put("z", tasks(3, "orders", e.now.Add(-time.Minute).UnixMilli()))
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if n := len(e.byTopic("orders")); n != 3 || len(e.w.calls) != 1 {
		t.Errorf("delivered %d in %d calls, want 3 in 1 (no rewrite when only Remove failed)", n, len(e.w.calls))
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("pending = %v, want none", rest)
	}
}

// failingStore fails its first calls.
type failingStore struct {
	*payload.Memory
	fails int
}

func (f *failingStore) Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error) {
	if f.fails > 0 {
		f.fails--
		return nil, errors.New("hbase down")
	}
	return f.Memory.Get(ctx, refs)
}

func TestRetriesStore(t *testing.T) {
	e := newEnv(t, Config{})
	e.put("z", tasks(3, "orders", e.now.Add(-time.Minute).UnixMilli()))
	e.s.store = &failingStore{Memory: e.store, fails: 3}
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if n := len(e.byTopic("orders")); n != 3 {
		t.Errorf("delivered %d, want 3", n)
	}
	if n := len(e.byTopic(topics.Failed)); n != 0 {
		t.Errorf("%d tasks sent to the failed topic while the store was down", n)
	}
}

// A stop that lands while a batch is being produced must not leave the
// produced entries in the index (they would be delivered again).
func TestRemovesProducedAfterStop(t *testing.T) {
	e := newEnv(t, Config{BatchSize: 2})
	ctx, stop := context.WithCancel(context.Background())
	e.fail(func([]kafka.Message) error { stop(); return nil })
	e.ix.failRemove = 1 // and Redis hiccups right then
	e.put("z", tasks(4, "orders", e.now.Add(-time.Minute).UnixMilli()))
	e.scan(ctx, scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	if n := len(e.byTopic("orders")); n != 2 {
		t.Fatalf("delivered %d, want the first batch of 2", n)
	}
	if rest := e.ix.pending("z"); len(rest) != 2 {
		t.Errorf("pending = %v, want the 2 unproduced entries", rest)
	}
}

// Writes go out one call per topic: a topic that fails its call fails no
// other topic's messages.
func TestOneCallPerTopic(t *testing.T) {
	e := newEnv(t, Config{MaxAttempts: 1000})
	e.fail(unknownTopic("nope"))
	base := e.now.Add(-time.Minute).UnixMilli()
	e.put("z", append(tasks(3, "orders", base), task("a", "audit", base), task("bad", "nope", base)))
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		for len(e.byTopic("orders"))+len(e.byTopic("audit")) < 4 {
			time.Sleep(time.Millisecond)
		}
		stop() // before the bad one is refused
	}()
	e.scan(ctx, scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	for _, c := range e.w.calls {
		topic := c[0].Topic
		for _, m := range c {
			if m.Topic != topic {
				t.Errorf("a call mixes topics %s and %s", topic, m.Topic)
			}
		}
	}
	if rest := e.ix.pending("z"); len(rest) != 1 || rest[0].ID != payload.TaskID("bad") {
		t.Errorf("pending = %v, want the bad one only", rest)
	}
}

// A check row (payload.IsCheck: a reschedule whose task never came) goes
// to the failed topic exactly as ingest stored it, counted as lifecycle (as ingest counts the reschedules it refuses);
// a marked one goes nowhere.
func TestCheckRowToFailed(t *testing.T) {
	e := newEnv(t, Config{})
	base := e.now.Add(-time.Minute).UnixMilli()
	check := task("ghost", "", base)
	check.Headers = []payload.Header{{Key: payload.HeaderOp, Value: []byte("reschedule")}, {Key: payload.HeaderError, Value: []byte("reschedule: unknown delay-id")}}
	marked := task("ghost-2", "", base+1)
	marked.Headers = check.Headers
	e.put("z", []payload.Task{check, marked})
	if err := e.store.Put(context.Background(), []payload.Task{{ID: marked.ID, Name: marked.Name, ExecAt: marked.ExecAt, Cancel: true}}); err != nil {
		t.Fatal(err)
	}

	e.scan(context.Background(), scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
	failed := e.byTopic(topics.Failed)
	if len(failed) != 1 {
		t.Fatalf("failed topic got %d messages, want the unmarked check", len(failed))
	}
	m := failed[0]
	if string(m.Key) != "k-ghost" || string(m.Value) != "v-ghost" || !reflect.DeepEqual(m.Headers, record.FromHeaders(check.Headers)) {
		t.Errorf("failed message %q %q %v, want the check row as stored", m.Key, m.Value, m.Headers)
	}
	if n := value(e.s.m.failed.WithLabelValues(reasonLifecycle)); n != 1 {
		t.Errorf("lifecycle failures %v, want 1", n)
	}
}

// A business topic delayd's principal may not write (a missing ACL) is
// delayd's setup, not bad input: its task stays pending and is written
// again, far past MaxAttempts, until the ACL is granted, then delivered
// once; nothing goes to the failed topic and other topics are delivered
// meanwhile.
func TestUnauthorizedTopicWaits(t *testing.T) {
	e := newEnv(t, Config{MaxAttempts: 2})
	var granted atomic.Bool
	e.fail(func(msgs []kafka.Message) error {
		werrs := make(kafka.WriteErrors, len(msgs))
		bad := false
		for i, m := range msgs {
			if m.Topic == "locked" && !granted.Load() {
				werrs[i], bad = kafka.TopicAuthorizationFailed, true
			}
		}
		if bad {
			return werrs
		}
		return nil
	})
	base := e.now.Add(-time.Minute).UnixMilli()
	e.put("z", append(tasks(3, "orders", base), task("acl", "locked", base+10)))
	time.AfterFunc(300*time.Millisecond, func() { granted.Store(true) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.scan(ctx, scantask.Task{Zset: "z", Until: e.now.UnixMilli()})

	if n := len(e.byTopic("orders")); n != 3 {
		t.Errorf("delivered %d tasks of other topics, want 3", n)
	}
	if got := names(e.byTopic("locked")); !slices.Equal(got, []string{"acl"}) {
		t.Errorf("delivered to the locked topic %v once the ACL was granted, want [acl]", got)
	}
	if n := len(e.byTopic(topics.Failed)); n != 0 {
		t.Errorf("%d messages in the failed topic for a missing ACL, want 0", n)
	}
	if v := value(e.s.m.unauthorized); v <= 2 {
		t.Errorf("unauthorized_total = %v, want more than MaxAttempts (2): retried until granted", v)
	}
	if !strings.Contains(e.logs.String(), "not authorized to write the topic") {
		t.Errorf("no WARN line names the missing ACL:\n%s", e.logs.String())
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("pending = %v, want none", rest)
	}
}

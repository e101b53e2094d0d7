package scanner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/kafka/topics"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// fakeIndex wraps the real zset index (on miniredis) and can fail calls.
type fakeIndex struct {
	*zset.Index
	mu         sync.Mutex
	failDue    int // fail this many Due calls
	failRemove int // fail this many Remove calls
	removes    int
}

func (f *fakeIndex) Due(ctx context.Context, key string, until int64, limit int) ([]zset.Entry, error) {
	f.mu.Lock()
	if f.failDue > 0 {
		f.failDue--
		f.mu.Unlock()
		return nil, errors.New("redis down")
	}
	f.mu.Unlock()
	return f.Index.Due(ctx, key, until, limit)
}

func (f *fakeIndex) Remove(ctx context.Context, key string, entries []zset.Entry) error {
	f.mu.Lock()
	f.removes++
	if f.failRemove > 0 {
		f.failRemove--
		f.mu.Unlock()
		return errors.New("redis down")
	}
	f.mu.Unlock()
	return f.Index.Remove(ctx, key, entries)
}

// fakeWriter records the messages it accepts; fail decides the answer to a call
// (nil: all written; kafka.WriteErrors: per message).
type fakeWriter struct {
	mu      sync.Mutex
	fail    func(msgs []kafka.Message) error
	calls   [][]kafka.Message
	written []kafka.Message
	after   func() // called after every call, outside the lock
}

func (w *fakeWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	w.calls = append(w.calls, slices.Clone(msgs))
	var err error
	if w.fail != nil {
		err = w.fail(msgs)
	}
	var werrs kafka.WriteErrors
	switch {
	case err == nil:
		w.written = append(w.written, msgs...)
	case errors.As(err, &werrs):
		for i, e := range werrs {
			if e == nil {
				w.written = append(w.written, msgs[i])
			}
		}
	}
	w.mu.Unlock()
	if w.after != nil {
		w.after()
	}
	return err
}

func (w *fakeWriter) byTopic(topic string) []kafka.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []kafka.Message
	for _, m := range w.written {
		if m.Topic == topic {
			out = append(out, m)
		}
	}
	return out
}

func header(m kafka.Message, key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

type env struct {
	t     *testing.T
	rdb   *redis.Client
	ix    *fakeIndex
	store *payload.Memory
	w     *fakeWriter
	s     *Scanner
	now   time.Time
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	zix, err := zset.New(rdb, zset.Config{Prefix: "test", Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, rdb: rdb, ix: &fakeIndex{Index: zix}, store: payload.NewMemory(), w: &fakeWriter{}, now: time.Now()}
	cfg.Brokers = []string{"127.0.0.1:1"}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Millisecond
		cfg.MaxBackoff = 5 * time.Millisecond
	}
	cfg.Registerer = prometheus.NewRegistry()
	e.s, err = New(cfg, e.ix, e.store, e.w)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// add stores tasks (row and index entry) due in the past; rowless adds only
// index entries. It returns the zset key (one shard: every past entry lands in
// the zset of the current segment).
func (e *env) add(tasks []payload.Task, rowless ...zset.Entry) string {
	e.t.Helper()
	ctx := context.Background()
	var rows []payload.Task
	entries := slices.Clone(rowless)
	for _, t := range tasks {
		rows = append(rows, t)
		if !t.Cancel {
			entries = append(entries, zset.Entry{ID: t.ID, ExecAt: t.ExecAt})
		}
	}
	if err := e.store.Put(ctx, rows); err != nil {
		e.t.Fatal(err)
	}
	if err := e.ix.Add(ctx, e.now, entries); err != nil {
		e.t.Fatal(err)
	}
	keys, err := e.ix.DueKeys(ctx, e.now.UnixMilli())
	if err != nil || len(keys) != 1 {
		e.t.Fatalf("DueKeys = %v, %v; want one key", keys, err)
	}
	return keys[0]
}

func (e *env) pending(key string) []zset.Entry {
	e.t.Helper()
	got, err := e.ix.Index.Due(context.Background(), key, 1<<52, 5000)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func task(name, topic string, execAt int64) payload.Task {
	return payload.Task{
		ID: payload.TaskID(name), Name: name, Topic: topic, ExecAt: execAt,
		Key: []byte("k-" + name), Value: []byte("v-" + name),
		Headers: []kafka.Header{{Key: "trace", Value: []byte("x")}},
	}
}

func tasks(n int, topic string, execAt int64) []payload.Task {
	out := make([]payload.Task, n)
	for i := range out {
		out[i] = task(fmt.Sprintf("task-%d", i), topic, execAt+int64(i))
	}
	return out
}

func value(c prometheus.Collector) float64 {
	ch := make(chan prometheus.Metric, 1)
	go func() { c.Collect(ch); close(ch) }()
	var sum float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			panic(err)
		}
		switch {
		case d.Counter != nil:
			sum += d.Counter.GetValue()
		case d.Histogram != nil:
			sum += float64(d.Histogram.GetSampleCount())
		}
	}
	return sum
}

func TestScanDeliversDue(t *testing.T) {
	e := newEnv(t, Config{})
	base := e.now.Add(-time.Minute).UnixMilli()
	ts := tasks(5, "orders", base) // ExecAt base .. base+4
	key := e.add(ts)

	// until = base+2: tasks 0..2 are due, 3 and 4 are not.
	if err := e.s.scan(context.Background(), scantask.Task{Zset: key, Until: base + 2}); err != nil {
		t.Fatal(err)
	}
	got := e.w.byTopic("orders")
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
	}
	if rest := e.pending(key); len(rest) != 2 || rest[0].ID != ts[3].ID || rest[1].ID != ts[4].ID {
		t.Errorf("pending after scan = %v, want tasks 3 and 4", rest)
	}
	if v := value(e.s.m.delivered); v != 3 {
		t.Errorf("delivered_total = %v, want 3", v)
	}
	if v := value(e.s.m.lateness); v != 3 {
		t.Errorf("lateness observations = %v, want 3", v)
	}
	if v := value(e.s.m.scanTasks); v != 1 {
		t.Errorf("scan_tasks_total = %v, want 1", v)
	}
}

func TestScanSkipsCancelledAndMissing(t *testing.T) {
	e := newEnv(t, Config{})
	base := e.now.Add(-time.Minute).UnixMilli()
	ts := tasks(3, "orders", base)
	cancel := ts[1]
	cancel.Cancel, cancel.Key, cancel.Value, cancel.Headers, cancel.Topic = true, nil, nil, nil, ""
	key := e.add(append(slices.Clone(ts), cancel), zset.Entry{ID: 42, ExecAt: base})

	if err := e.s.scan(context.Background(), scantask.Task{Zset: key, Until: e.now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range e.w.byTopic("orders") {
		id, _ := header(m, payload.HeaderID)
		names = append(names, id)
	}
	if want := []string{"task-0", "task-2"}; !slices.Equal(names, want) {
		t.Errorf("delivered %v, want %v", names, want)
	}
	if rest := e.pending(key); len(rest) != 0 {
		t.Errorf("pending after scan = %v, want none (cancelled and missing removed too)", rest)
	}
	if c, m := value(e.s.m.cancelled), value(e.s.m.missing); c != 1 || m != 1 {
		t.Errorf("cancelled, missing = %v, %v; want 1, 1", c, m)
	}
}

func TestScanKeepsEntriesWhenWriteFails(t *testing.T) {
	e := newEnv(t, Config{})
	e.w.fail = func([]kafka.Message) error { return errors.New("broker down") }
	ts := tasks(4, "orders", e.now.Add(-time.Minute).UnixMilli())
	missing := zset.Entry{ID: 7, ExecAt: ts[0].ExecAt}
	key := e.add(ts, missing)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := e.s.scan(ctx, scantask.Task{Zset: key, Until: e.now.UnixMilli()})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("scan error = %v, want deadline exceeded", err)
	}
	// The missing entry needs no write and may go; every task entry must stay.
	rest := e.pending(key)
	if len(rest) != len(ts) {
		t.Fatalf("pending after failed writes = %v, want the %d task entries", rest, len(ts))
	}
	if len(e.w.calls) < 2 {
		t.Errorf("writer called %d times, want retries", len(e.w.calls))
	}
	if v := value(e.s.m.delivered); v != 0 {
		t.Errorf("delivered_total = %v, want 0", v)
	}
}

func TestScanRetriesPartialWrite(t *testing.T) {
	e := newEnv(t, Config{})
	first := true
	e.w.fail = func(msgs []kafka.Message) error {
		if !first {
			return nil
		}
		first = false
		werrs := make(kafka.WriteErrors, len(msgs))
		werrs[1] = kafka.NotLeaderForPartition
		return werrs
	}
	ts := tasks(3, "orders", e.now.Add(-time.Minute).UnixMilli())
	key := e.add(ts)
	if err := e.s.scan(context.Background(), scantask.Task{Zset: key, Until: e.now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if len(e.w.calls) != 2 || len(e.w.calls[1]) != 1 {
		t.Fatalf("writer calls = %d (sizes %d...), want 2, the second with the one failed message", len(e.w.calls), len(e.w.calls[0]))
	}
	if id, _ := header(e.w.calls[1][0], payload.HeaderID); id != "task-1" {
		t.Errorf("retried %q, want task-1", id)
	}
	if got := e.w.byTopic("orders"); len(got) != 3 {
		t.Errorf("delivered %d, want each of 3 once", len(got))
	}
	if rest := e.pending(key); len(rest) != 0 {
		t.Errorf("pending = %v, want none", rest)
	}
}

func TestScanLoopsOverBatches(t *testing.T) {
	e := newEnv(t, Config{BatchSize: 10})
	ts := tasks(35, "orders", e.now.Add(-time.Minute).UnixMilli())
	key := e.add(ts)
	if err := e.s.scan(context.Background(), scantask.Task{Zset: key, Until: e.now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if len(e.w.calls) != 4 {
		t.Errorf("writer calls = %d, want 4 (10+10+10+5)", len(e.w.calls))
	}
	seen := map[string]int{}
	for _, m := range e.w.byTopic("orders") {
		id, _ := header(m, payload.HeaderID)
		seen[id]++
	}
	for _, tk := range ts {
		if seen[tk.Name] != 1 {
			t.Errorf("%s delivered %d times", tk.Name, seen[tk.Name])
		}
	}
	if rest := e.pending(key); len(rest) != 0 {
		t.Errorf("pending = %d entries, want none", len(rest))
	}
}

func TestScanExactBatchMultiple(t *testing.T) {
	e := newEnv(t, Config{BatchSize: 5})
	key := e.add(tasks(10, "orders", e.now.Add(-time.Minute).UnixMilli()))
	if err := e.s.scan(context.Background(), scantask.Task{Zset: key, Until: e.now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.w.byTopic("orders")); n != 10 {
		t.Errorf("delivered %d, want 10", n)
	}
}

func TestScanRoutesRefusedToFailed(t *testing.T) {
	cases := []struct {
		name    string
		fail    func([]kafka.Message) error
		reason  string // substring of delay-error
		attempt int    // writes of the bad message expected at least
	}{
		{
			// kafka-go fails the whole call, before writing anything, when one
			// topic's metadata says unknown.
			name: "unknown topic fails whole call",
			fail: func(msgs []kafka.Message) error {
				for _, m := range msgs {
					if m.Topic == "nope" {
						return kafka.UnknownTopicOrPartition
					}
				}
				return nil
			},
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
			e.w.fail = tc.fail
			base := e.now.Add(-time.Minute).UnixMilli()
			good := tasks(3, "orders", base)
			bad := task("bad", "nope", base+10)
			key := e.add(append(good, bad))

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := e.s.scan(ctx, scantask.Task{Zset: key, Until: e.now.UnixMilli()}); err != nil {
				t.Fatal(err)
			}
			if n := len(e.w.byTopic("orders")); n != 3 {
				t.Errorf("delivered %d good tasks, want 3", n)
			}
			failed := e.w.byTopic(topics.Failed)
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
			var attempts int
			for _, c := range e.w.calls {
				for _, m := range c {
					if m.Topic == "nope" {
						attempts++
					}
				}
			}
			if attempts < tc.attempt {
				t.Errorf("bad message written %d times, want >= %d", attempts, tc.attempt)
			}
			if rest := e.pending(key); len(rest) != 0 {
				t.Errorf("pending = %v, want none", rest)
			}
			if v := value(e.s.m.failed); v != 1 {
				t.Errorf("tasks_failed_total = %v, want 1", v)
			}
		})
	}
}

func TestScanStripsWhatFailedTopicRefuses(t *testing.T) {
	e := newEnv(t, Config{})
	e.w.fail = func(msgs []kafka.Message) error {
		for i, m := range msgs {
			if len(m.Value) > 100 {
				rest := slices.Delete(slices.Clone(msgs), i, i+1)
				return kafka.MessageTooLargeError{Message: m, Remaining: rest}
			}
		}
		return nil
	}
	base := e.now.Add(-time.Minute).UnixMilli()
	big := task("big", "orders", base)
	big.Value = make([]byte, 1000)
	key := e.add([]payload.Task{big, task("small", "orders", base+1)})
	if err := e.s.scan(context.Background(), scantask.Task{Zset: key, Until: e.now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if got := e.w.byTopic("orders"); len(got) != 1 {
		t.Errorf("delivered %d, want the small one", len(got))
	}
	failed := e.w.byTopic(topics.Failed)
	if len(failed) != 1 || failed[0].Value != nil {
		t.Fatalf("failed topic got %v, want one stripped record", failed)
	}
	if v, _ := header(failed[0], payload.HeaderError); !strings.Contains(v, "dropped") {
		t.Errorf("delay-error = %q", v)
	}
	if rest := e.pending(key); len(rest) != 0 {
		t.Errorf("pending = %v, want none", rest)
	}
}

func TestScanRetriesRedis(t *testing.T) {
	e := newEnv(t, Config{})
	e.ix.failDue, e.ix.failRemove = 2, 2
	key := e.add(tasks(3, "orders", e.now.Add(-time.Minute).UnixMilli()))
	if err := e.s.scan(context.Background(), scantask.Task{Zset: key, Until: e.now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.w.byTopic("orders")); n != 3 || len(e.w.calls) != 1 {
		t.Errorf("delivered %d in %d calls, want 3 in 1 (no rewrite when only Remove failed)", n, len(e.w.calls))
	}
	if rest := e.pending(key); len(rest) != 0 {
		t.Errorf("pending = %v, want none", rest)
	}
}

// A stop that lands while a batch is being produced must not leave the
// produced entries in the index (they would be delivered again).
func TestScanRemovesProducedAfterCancel(t *testing.T) {
	e := newEnv(t, Config{BatchSize: 2})
	ctx, cancel := context.WithCancel(context.Background())
	e.w.after = cancel
	e.ix.failRemove = 1 // and Redis hiccups right then
	key := e.add(tasks(4, "orders", e.now.Add(-time.Minute).UnixMilli()))
	err := e.s.scan(ctx, scantask.Task{Zset: key, Until: e.now.UnixMilli()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("scan error = %v, want canceled", err)
	}
	if n := len(e.w.byTopic("orders")); n != 2 {
		t.Fatalf("delivered %d, want the first batch of 2", n)
	}
	if rest := e.pending(key); len(rest) != 2 {
		t.Errorf("pending = %v, want the 2 unproduced entries", rest)
	}
}

// The end of the task's context does not cut a write short: kafka-go would
// go on producing a batch whose call returned ctx.Err().
func TestScanWriteOutlivesDeadline(t *testing.T) {
	e := newEnv(t, Config{})
	var writeCtxErr error
	e.w.fail = func([]kafka.Message) error { return nil }
	slow := &ctxWriter{fakeWriter: e.w, delay: 80 * time.Millisecond, err: &writeCtxErr}
	e.s.w = slow
	key := e.add(tasks(3, "orders", e.now.Add(-time.Minute).UnixMilli()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := e.s.scan(ctx, scantask.Task{Zset: key, Until: e.now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if writeCtxErr != nil {
		t.Errorf("write context ended during the write: %v", writeCtxErr)
	}
	if n := len(e.w.byTopic("orders")); n != 3 {
		t.Errorf("delivered %d, want 3", n)
	}
	if rest := e.pending(key); len(rest) != 0 {
		t.Errorf("pending = %v, want none: produced entries must be removed", rest)
	}
}

// ctxWriter takes delay per call and records whether its context ended.
type ctxWriter struct {
	*fakeWriter
	delay time.Duration
	err   *error
}

func (w *ctxWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	time.Sleep(w.delay)
	*w.err = ctx.Err()
	return w.fakeWriter.WriteMessages(context.WithoutCancel(ctx), msgs...)
}

func TestWorkerOfIsStable(t *testing.T) {
	for _, key := range []string{"a", "delayq:202501311459:17", ""} {
		w := workerOf(key, 8)
		if w < 0 || w >= 8 || workerOf(key, 8) != w {
			t.Errorf("workerOf(%q) = %d", key, w)
		}
	}
}

func TestPartitionCommitsLowWaterMark(t *testing.T) {
	p := newPartition(0)
	if _, ok := p.pending(); ok {
		t.Fatal("pending before any task")
	}
	for off := int64(10); off < 13; off++ {
		p.start(off)
	}
	p.finish(12)
	if _, ok := p.pending(); ok {
		t.Fatal("pending with offset 10 unfinished")
	}
	p.finish(10)
	if off, ok := p.pending(); !ok || off != 11 {
		t.Fatalf("pending = %d, %v; want 11", off, ok)
	}
	p.committed(11)
	if _, ok := p.pending(); ok {
		t.Fatal("pending right after commit")
	}
	p.finish(11)
	if off, ok := p.pending(); !ok || off != 13 {
		t.Fatalf("pending = %d, %v; want 13", off, ok)
	}
}

// Workers finish what they run, commit only finished tasks, and start nothing
// after stop.
func TestWorkCommitsFinishedOnly(t *testing.T) {
	e := newEnv(t, Config{})
	base := e.now.Add(-time.Minute).UnixMilli()
	key := e.add(tasks(2, "orders", base))
	p := newPartition(3)
	q := make(chan job, 4)
	for off := int64(0); off < 3; off++ {
		p.start(off)
	}
	q <- job{task: scantask.Task{Zset: key, Until: e.now.UnixMilli()}, offset: 0}
	q <- job{task: scantask.Task{Zset: key, Until: e.now.UnixMilli()}, offset: 1} // duplicate: harmless
	close(q)
	ctx := context.Background()
	e.s.work(ctx, ctx, p, q)
	if off, ok := p.pending(); !ok || off != 2 {
		t.Fatalf("pending = %d, %v; want 2", off, ok)
	}
	if n := len(e.w.byTopic("orders")); n != 2 {
		t.Errorf("delivered %d, want 2 (duplicate scan task delivers nothing twice)", n)
	}

	stopped, stop := context.WithCancel(ctx)
	stop()
	q = make(chan job, 1)
	q <- job{task: scantask.Task{Zset: key, Until: e.now.UnixMilli()}, offset: 2}
	close(q)
	e.s.work(stopped, ctx, p, q)
	if off, _ := p.pending(); off != 2 {
		t.Errorf("pending = %d after a job skipped on stop; want 2", off)
	}
}

// With the dispatcher's lookahead a scan task covers entries not due yet:
// the worker delivers each at its exec_at, never before, and a zset waiting
// for its next entry does not hold up another zset of the same worker.
func TestWorkDeliversAtExecAt(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	now := time.Now()
	var (
		mu   sync.Mutex
		sent = map[string]time.Time{}
	)
	e.w.fail = func(msgs []kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			id, _ := header(m, payload.HeaderID)
			sent[id] = time.Now()
		}
		return nil
	}
	// Zset A: two tasks due 300 and 600 ms from now. Zset B (another
	// prefix, same Redis): one overdue task, queued after A's.
	soon := []payload.Task{
		task("a1", "orders", now.Add(300*time.Millisecond).UnixMilli()),
		task("a2", "orders", now.Add(600*time.Millisecond).UnixMilli()),
	}
	late := task("b1", "orders", now.Add(-time.Second).UnixMilli())
	if err := e.store.Put(ctx, append(slices.Clone(soon), late)); err != nil {
		t.Fatal(err)
	}
	other, err := zset.New(e.rdb, zset.Config{Prefix: "other", Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition(0)
	q := make(chan job, 8)
	var off int64
	until := now.Add(time.Second).UnixMilli()
	for _, tk := range soon {
		entry := zset.Entry{ID: tk.ID, ExecAt: tk.ExecAt}
		if err := e.ix.Add(ctx, now, []zset.Entry{entry}); err != nil {
			t.Fatal(err)
		}
		p.start(off)
		q <- job{task: scantask.Task{Zset: e.ix.Key(entry), Until: until}, offset: off}
		off++
	}
	if err := other.Add(ctx, now, []zset.Entry{{ID: late.ID, ExecAt: late.ExecAt}}); err != nil {
		t.Fatal(err)
	}
	p.start(off)
	q <- job{task: scantask.Task{Zset: other.Key(zset.Entry{ID: late.ID, ExecAt: now.UnixMilli()}), Until: until}, offset: off}
	close(q)

	e.s.work(ctx, ctx, p, q)
	mu.Lock()
	defer mu.Unlock()
	for _, tk := range append(soon, late) {
		at, ok := sent[tk.Name]
		switch {
		case !ok:
			t.Errorf("%s not delivered", tk.Name)
		case at.UnixMilli() < tk.ExecAt:
			t.Errorf("%s delivered %v before its exec_at", tk.Name, time.UnixMilli(tk.ExecAt).Sub(at))
		case tk.Name != late.Name && at.Sub(time.UnixMilli(tk.ExecAt)) > 250*time.Millisecond:
			t.Errorf("%s delivered %v after its exec_at, want about at it", tk.Name, at.Sub(time.UnixMilli(tk.ExecAt)))
		}
	}
	if b, a := sent["b1"], time.UnixMilli(soon[0].ExecAt); !b.Before(a) {
		t.Errorf("overdue b1 delivered at %v, after a1 fell due at %v: the wait for a1 held it up", b, a)
	}
	if got, ok := p.pending(); !ok || got != off+1 {
		t.Errorf("commit point %d, %v; want %d: every task finished", got, ok, off+1)
	}
}

// Due entries of several zsets held by one worker go out together: one
// store Get and one write.
func TestWorkStepsZsetsTogether(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	p := newPartition(0)
	q := make(chan job, 8)
	var want []string
	for i := range 3 {
		ix, err := zset.New(e.rdb, zset.Config{Prefix: fmt.Sprintf("z%d", i), Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		tk := task(fmt.Sprintf("t%d", i), "orders", e.now.Add(-time.Second).UnixMilli())
		if err := e.store.Put(ctx, []payload.Task{tk}); err != nil {
			t.Fatal(err)
		}
		if err := ix.Add(ctx, e.now, []zset.Entry{{ID: tk.ID, ExecAt: tk.ExecAt}}); err != nil {
			t.Fatal(err)
		}
		p.start(int64(i))
		q <- job{task: scantask.Task{Zset: ix.Key(zset.Entry{ID: tk.ID, ExecAt: e.now.UnixMilli()}), Until: e.now.UnixMilli()}, offset: int64(i)}
		want = append(want, tk.Name)
	}
	close(q)
	e.s.work(ctx, ctx, p, q)
	if len(e.w.calls) != 1 || len(e.w.calls[0]) != 3 {
		t.Fatalf("writes %d (first of %d messages), want one of 3", len(e.w.calls), len(e.w.calls[0]))
	}
	var got []string
	for _, m := range e.w.calls[0] {
		id, _ := header(m, payload.HeaderID)
		got = append(got, id)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	if off, ok := p.pending(); !ok || off != 3 {
		t.Errorf("commit point %d, %v; want 3", off, ok)
	}
	for i := range 3 {
		ix, _ := zset.New(e.rdb, zset.Config{Prefix: fmt.Sprintf("z%d", i), Shards: 1})
		keys, err := ix.DueKeys(ctx, e.now.UnixMilli())
		if err != nil || len(keys) != 0 {
			t.Errorf("zset z%d still holds due entries: %v %v", i, keys, err)
		}
	}
}

// A stop while tasks wait for their entries returns at once and leaves
// those tasks unfinished for the next owner.
func TestWorkStopsWhileWaiting(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	now := time.Now()
	tk := task("later", "orders", now.Add(time.Hour).UnixMilli())
	if err := e.store.Put(ctx, []payload.Task{tk}); err != nil {
		t.Fatal(err)
	}
	entry := zset.Entry{ID: tk.ID, ExecAt: tk.ExecAt}
	if err := e.ix.Add(ctx, now, []zset.Entry{entry}); err != nil {
		t.Fatal(err)
	}
	p := newPartition(0)
	p.start(0)
	q := make(chan job, 1)
	q <- job{task: scantask.Task{Zset: e.ix.Key(entry), Until: tk.ExecAt}, offset: 0}
	stopCtx, stop := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, stop)
	start := time.Now()
	e.s.work(stopCtx, ctx, p, q)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("work returned %v after stop", d)
	}
	if _, ok := p.pending(); ok {
		t.Error("a task still waiting was committed")
	}
	if n := len(e.w.byTopic("orders")); n != 0 {
		t.Errorf("delivered %d, want none", n)
	}
	if v := value(e.s.m.scanTasks); v != 1 {
		t.Errorf("scan_tasks_total = %v, want 1 (abandoned)", v)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"defaults", Config{Brokers: []string{"b"}}, nil},
		{"everything wrong", Config{Workers: -1, BatchSize: 6000, MaxAttempts: -1, Topic: "x", FailedTopic: "x", DrainTimeout: time.Minute},
			[]string{"no brokers", "workers", "batch size", "max attempts", "both", "drain timeout"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.setDefaults()
			err := cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("Validate = %v, want ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {4, 800 * time.Millisecond}, {10, time.Second}} {
		if got := backoff(100*time.Millisecond, time.Second, tc.attempt); got != tc.want {
			t.Errorf("backoff(%d) = %s, want %s", tc.attempt, got, tc.want)
		}
	}
}

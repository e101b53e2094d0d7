package scanner

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// memIndex is an in-memory Index (no network, so it runs inside
// testing/synctest bubbles) that can fail or slow down calls.
type memIndex struct {
	mu          sync.Mutex
	zsets       map[string][]zset.Entry // sorted by ExecAt
	failDue     int                     // fail this many Due calls
	failRemove  int                     // fail this many Remove calls
	removeDelay time.Duration           // every Remove takes this long
	reads       int                     // zsets read
	trips       int                     // DueMany and RemoveMany calls (round trips)
	removes     int
}

func (m *memIndex) add(key string, es ...zset.Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.zsets == nil {
		m.zsets = map[string][]zset.Entry{}
	}
	z := append(m.zsets[key], es...)
	slices.SortStableFunc(z, func(a, b zset.Entry) int { return cmp.Compare(a.ExecAt, b.ExecAt) })
	m.zsets[key] = z
}

func (m *memIndex) set(key string, es []zset.Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.zsets == nil {
		m.zsets = map[string][]zset.Entry{}
	}
	m.zsets[key] = slices.Clone(es)
}

func (m *memIndex) Due(_ context.Context, key string, until int64, limit int) ([]zset.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.failDue > 0 {
		m.failDue--
		return nil, errors.New("redis down")
	}
	es := m.zsets[key]
	n := 0
	for n < len(es) && n < limit && es[n].ExecAt <= until {
		n++
	}
	return slices.Clone(es[:n]), nil
}

func (m *memIndex) Remove(ctx context.Context, key string, entries []zset.Entry) error {
	return m.RemoveMany(ctx, []zset.Removal{{Key: key, Entries: entries}})
}

func (m *memIndex) DueMany(ctx context.Context, rs []zset.Range, limit int) ([][]zset.Entry, error) {
	m.mu.Lock()
	m.trips++
	m.mu.Unlock()
	out := make([][]zset.Entry, len(rs))
	for i, r := range rs {
		es, err := m.Due(ctx, r.Key, r.Until, limit)
		if err != nil {
			return nil, err
		}
		out[i] = es
	}
	return out, nil
}

// RemoveMany takes removeDelay once: a pipeline is one round trip.
func (m *memIndex) RemoveMany(ctx context.Context, rs []zset.Removal) error {
	if m.removeDelay > 0 {
		select {
		case <-time.After(m.removeDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trips++
	m.removes++
	if m.failRemove > 0 {
		m.failRemove--
		return errors.New("redis down")
	}
	for _, r := range rs {
		gone := make(map[zset.Entry]bool, len(r.Entries))
		for _, e := range r.Entries {
			gone[e] = true
		}
		m.zsets[r.Key] = slices.DeleteFunc(m.zsets[r.Key], func(e zset.Entry) bool { return gone[e] })
	}
	return nil
}

func (m *memIndex) Earliest(_ context.Context, from, until int64) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var (
		low   int64
		found bool
	)
	for _, es := range m.zsets {
		for _, e := range es {
			if e.ExecAt >= from && e.ExecAt <= until && (!found || e.ExecAt < low) {
				low, found = e.ExecAt, true
			}
		}
	}
	return low, found, nil
}

// Add puts every entry in zset z and, like ZADD NX, adds an (id, exec_at)
// already there no second time.
func (m *memIndex) Add(_ context.Context, _ time.Time, entries []zset.Entry) error {
	have := m.pending("z")
	for _, e := range entries {
		if !slices.Contains(have, e) {
			m.add("z", e)
			have = append(have, e)
		}
	}
	return nil
}

func (m *memIndex) pending(key string) []zset.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.zsets[key])
}

// broker decides the answer to one WriteMessages call: nil (all written),
// kafka.WriteErrors (per message) or another error (the whole call, nothing
// written).
type broker func(msgs []kafka.Message) error

// fakeWriter records the calls and the messages it accepts.
type fakeWriter struct {
	mu      sync.Mutex
	fail    broker
	delay   time.Duration // each call takes this long; ctx ending first returns ctx.Err() but writes anyway, as kafka-go does
	calls   [][]kafka.Message
	written []kafka.Message
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
	delay := w.delay
	w.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (w *fakeWriter) callCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.calls)
}

// env is a Scanner on an in-memory index and store with fake writers: w
// for batches and single for messages written alone.
type env struct {
	t      *testing.T
	ix     *memIndex
	store  *payload.Memory
	w      *fakeWriter
	single *fakeWriter
	s      *Scanner
	r      *releaser // owner "me"; made by rel
	logs   *syncBuffer
	now    time.Time
}

// rel returns e's releaser, the one of its Scanner with owner "me".
func (e *env) rel() *releaser {
	if e.r == nil {
		e.r = &releaser{s: e.s, owner: "me"}
	}
	return e.r
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	e := &env{t: t, ix: &memIndex{}, store: payload.NewMemory(), w: &fakeWriter{}, single: &fakeWriter{},
		logs: &syncBuffer{}, now: time.Now()}
	cfg.Brokers = []string{"127.0.0.1:1"}
	if cfg.Backoff == (retry.Backoff{}) {
		cfg.Backoff = retry.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}
	}
	cfg.Registerer = prometheus.NewRegistry()
	cfg.Logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.SingleWriter = e.single
	var err error
	if e.s, err = New(cfg, e.ix, e.store, e.w); err != nil {
		t.Fatal(err)
	}
	return e
}

// fail makes both writers answer with b.
func (e *env) fail(b broker) {
	e.w.mu.Lock()
	e.w.fail = b
	e.w.mu.Unlock()
	e.single.mu.Lock()
	e.single.fail = b
	e.single.mu.Unlock()
}

// put stores tasks (row and index entry in zset key) and entries without a
// row.
func (e *env) put(key string, tasks []payload.Task, rowless ...zset.Entry) {
	e.t.Helper()
	var entries []zset.Entry
	for _, task := range tasks {
		if !task.Cancel {
			entries = append(entries, zset.Entry{ID: task.ID, ExecAt: task.ExecAt})
		}
	}
	if err := e.store.Put(context.Background(), tasks); err != nil {
		e.t.Fatal(err)
	}
	e.ix.add(key, append(entries, rowless...)...)
}

// scan runs the scan tasks on one worker, as a partition's goroutine does,
// until they are done or ctx ends, and returns the partition.
func (e *env) scan(ctx context.Context, tasks ...scantask.Task) *partition {
	p := newPartition(0)
	q := make(chan scanTask, len(tasks))
	for i, task := range tasks {
		p.start(int64(i))
		q <- scanTask{Task: task, offset: int64(i)}
	}
	close(q)
	e.s.work(ctx, p, q)
	return p
}

// byTopic returns the messages written to topic, by both writers.
func (e *env) byTopic(topic string) []kafka.Message {
	var out []kafka.Message
	for _, w := range []*fakeWriter{e.w, e.single} {
		w.mu.Lock()
		for _, m := range w.written {
			if m.Topic == topic {
				out = append(out, m)
			}
		}
		w.mu.Unlock()
	}
	return out
}

// names returns the delay-id headers of msgs, sorted.
func names(msgs []kafka.Message) []string {
	var out []string
	for _, m := range msgs {
		id, _ := header(m, payload.HeaderID)
		out = append(out, id)
	}
	slices.Sort(out)
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

func task(name, topic string, execAt int64) payload.Task {
	return payload.Task{
		ID: payload.TaskID(name), Name: name, Topic: topic, ExecAt: execAt,
		Key: []byte("k-" + name), Value: []byte("v-" + name),
		Headers: []payload.Header{{Key: "trace", Value: []byte("x")}},
	}
}

func tasks(n int, topic string, execAt int64) []payload.Task {
	out := make([]payload.Task, n)
	for i := range out {
		out[i] = task(fmt.Sprintf("task-%d", i), topic, execAt+int64(i))
	}
	return out
}

// value sums a collector's counters, gauges and histogram counts.
func value(c prometheus.Collector) float64 {
	ch := make(chan prometheus.Metric, 16)
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
		case d.Gauge != nil:
			sum += d.Gauge.GetValue()
		case d.Histogram != nil:
			sum += float64(d.Histogram.GetSampleCount())
		}
	}
	return sum
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

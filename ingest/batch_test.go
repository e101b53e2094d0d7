package ingest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/metric"
	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// msg is an input message at partition/offset with header pairs, its
// record timestamp testNow.
func msg(partition int, offset int64, kv ...string) payload.Message {
	m := payload.Message{
		Topic:     "delay-input",
		Partition: partition,
		Offset:    offset,
		Key:       []byte("k" + strconv.FormatInt(offset, 10)),
		Value:     []byte("v" + strconv.FormatInt(offset, 10)),
		Time:      testNow,
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Headers = append(m.Headers, payload.Header{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return m
}

func valid(offset int64) payload.Message {
	at := testNow.Add(time.Minute + time.Duration(offset)*time.Second)
	switch offset % 3 {
	case 0:
		return msg(0, offset, payload.HeaderTopic, "biz", payload.HeaderAt, at.Format(time.RFC3339), "trace", "t1")
	case 1:
		return msg(0, offset, payload.HeaderTopic, "biz", payload.HeaderAt, strconv.FormatInt(at.UnixMilli(), 10))
	default:
		return msg(0, offset, payload.HeaderTopic, "biz", payload.HeaderAfter, "90s")
	}
}

func cancel(offset int64) payload.Message {
	return msg(1, offset, payload.HeaderOp, payload.OpCancel, payload.HeaderID, "task-"+strconv.FormatInt(offset, 10),
		payload.HeaderAt, testNow.Add(time.Hour).Format(time.RFC3339))
}

func malformed(offset int64) payload.Message {
	return msg(2, offset, payload.HeaderAt, testNow.Add(time.Hour).Format(time.RFC3339), "trace", "t2") // no delay-topic
}

type fixture struct {
	in    *Ingester
	store *fakeStore
	ix    *fakeIndex
	w     *fakeWriter
	ev    *events
}

func newFixture(t *testing.T, edit func(*Config)) *fixture {
	t.Helper()
	ev := &events{}
	f := &fixture{ev: ev, store: &fakeStore{ev: ev}, ix: &fakeIndex{ev: ev}, w: &fakeWriter{ev: ev}}
	cfg := Config{
		Brokers:    []string{"127.0.0.1:1"},
		Registerer: prometheus.NewRegistry(),
	}
	if edit != nil {
		edit(&cfg)
	}
	in, err := New(cfg, f.store, f.ix, f.w)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// Quick retries for the tests on the real clock; under synctest the
	// defaults cost nothing.
	in.backoff = retry.Backoff{Base: time.Millisecond, Max: 4 * time.Millisecond}
	f.in = in
	return f
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func header(m payload.Message, key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func TestHandle(t *testing.T) {
	mix := []payload.Message{valid(0), valid(1), valid(2), cancel(3), malformed(4)}
	type failedWant struct {
		offset int64
		reason string // substring of delay-error
	}
	tests := []struct {
		name      string
		msgs      []payload.Message
		store     script
		index     script
		writer    script
		writeFail func(payload.Message, int) error
		limit     int
		refusePut func(payload.Task) bool
		refuseAdd func(zset.Entry) bool

		wantPuts     int // Put calls
		wantStored   int // tasks stored
		wantAdds     int // Add calls
		wantIndexed  int // entries indexed
		wantFailed   []failedWant
		wantAccepted float64
		wantCancels  float64
		wantReasons  map[string]float64
	}{
		{
			name: "valid in three time formats and a cancel", msgs: []payload.Message{valid(0), valid(1), valid(2), cancel(3)},
			wantPuts: 1, wantStored: 4, wantAdds: 1, wantIndexed: 3, wantAccepted: 3, wantCancels: 1,
		},
		{
			name: "malformed goes to failed with reason and original bytes", msgs: mix,
			wantPuts: 1, wantStored: 4, wantAdds: 1, wantIndexed: 3,
			wantFailed:   []failedWant{{4, "delay-topic"}},
			wantAccepted: 3, wantCancels: 1, wantReasons: map[string]float64{ReasonContract: 1},
		},
		{
			name: "only malformed: no store calls", msgs: []payload.Message{malformed(0), malformed(1)},
			wantFailed:  []failedWant{{0, "delay-topic"}, {1, "delay-topic"}},
			wantReasons: map[string]float64{ReasonContract: 2},
		},
		{
			name: "cancels only: no index add", msgs: []payload.Message{cancel(0), cancel(1)},
			wantPuts: 1, wantStored: 2, wantCancels: 2,
		},
		{
			name: "store errors are retried", msgs: mix, store: script{errs: []error{errBoom, errBoom}},
			wantPuts: 3, wantStored: 4, wantAdds: 1, wantIndexed: 3,
			wantFailed:   []failedWant{{4, "delay-topic"}},
			wantAccepted: 3, wantCancels: 1, wantReasons: map[string]float64{ReasonContract: 1},
		},
		{
			// Issue 10: five failures used to send the batch to delay-failed.
			name: "store outage of a minute stalls, then stores", msgs: mix, store: script{outage: time.Minute},
			wantStored: 4, wantAdds: 1, wantIndexed: 3,
			wantFailed:   []failedWant{{4, "delay-topic"}},
			wantAccepted: 3, wantCancels: 1, wantReasons: map[string]float64{ReasonContract: 1},
		},
		{
			name: "index errors are retried", msgs: mix, index: script{errs: []error{errBoom}},
			wantPuts: 1, wantStored: 4, wantAdds: 2, wantIndexed: 3,
			wantFailed:   []failedWant{{4, "delay-topic"}},
			wantAccepted: 3, wantCancels: 1, wantReasons: map[string]float64{ReasonContract: 1},
		},
		{
			name: "index outage of a minute stalls, then indexes", msgs: mix, index: script{outage: time.Minute},
			wantPuts: 1, wantStored: 4, wantIndexed: 3,
			wantFailed:   []failedWant{{4, "delay-topic"}},
			wantAccepted: 3, wantCancels: 1, wantReasons: map[string]float64{ReasonContract: 1},
		},
		{
			name: "failed write errors are retried", msgs: mix, writer: script{errs: []error{errBoom}},
			wantPuts: 1, wantStored: 4, wantAdds: 1, wantIndexed: 3,
			wantFailed:   []failedWant{{4, "delay-topic"}},
			wantAccepted: 3, wantCancels: 1, wantReasons: map[string]float64{ReasonContract: 1},
		},
		{
			name: "failed topic outage of a minute stalls, then writes", msgs: mix, writer: script{outage: time.Minute},
			wantPuts: 1, wantStored: 4, wantAdds: 1, wantIndexed: 3,
			wantFailed:   []failedWant{{4, "delay-topic"}},
			wantAccepted: 3, wantCancels: 1, wantReasons: map[string]float64{ReasonContract: 1},
		},
		{
			// Issue 11: one refused task used to take its batch with it.
			name: "store refusing one task fails it alone", msgs: mix,
			refusePut: func(t payload.Task) bool { return t.ExecAt == testNow.Add(time.Minute+time.Second).UnixMilli() }, // valid(1)
			// [0 1 2 3] refused, [0 1] refused, [0] ok, [1] refused, [2 3] ok
			wantPuts: 5, wantStored: 3, wantAdds: 1, wantIndexed: 2,
			wantFailed:   []failedWant{{1, "store: put 1 tasks: payload: contract violation: row of"}, {4, "delay-topic"}},
			wantAccepted: 2, wantCancels: 1, wantReasons: map[string]float64{ReasonContract: 1, ReasonStore: 1},
		},
		{
			name: "index refusing one entry fails it alone", msgs: mix,
			refuseAdd: func(e zset.Entry) bool { return e.ExecAt == testNow.Add(time.Minute).UnixMilli() }, // valid(0)
			// [0 1 2] refused, [0] refused, [1 2] ok
			wantPuts: 1, wantStored: 4, wantAdds: 3, wantIndexed: 2,
			wantFailed:   []failedWant{{0, "index: zset: bad entry: id"}, {4, "delay-topic"}},
			wantAccepted: 2, wantCancels: 1, wantReasons: map[string]float64{ReasonContract: 1, ReasonIndex: 1},
		},
		{
			name: "store refusing a cancel fails it alone", msgs: mix,
			refusePut: func(t payload.Task) bool { return t.Cancel },
			wantPuts:  5, wantStored: 3, wantAdds: 1, wantIndexed: 3,
			wantFailed:   []failedWant{{3, "store: "}, {4, "delay-topic"}},
			wantAccepted: 3, wantReasons: map[string]float64{ReasonContract: 1, ReasonStore: 1},
		},
		{
			name: "partial write errors retry only the failed messages",
			msgs: []payload.Message{malformed(0), malformed(1), malformed(2)},
			writeFail: func(m payload.Message, call int) error {
				if call == 0 && m.Offset == 1 {
					return kafka.NotLeaderForPartition
				}
				return nil
			},
			wantFailed:  []failedWant{{0, "delay-topic"}, {1, "delay-topic"}, {2, "delay-topic"}},
			wantReasons: map[string]float64{ReasonContract: 3},
		},
		{
			name: "failed message too large loses its value",
			msgs: []payload.Message{malformed(0), func() payload.Message {
				m := malformed(1)
				m.Value = make([]byte, 100)
				return m
			}()},
			limit:       10,
			wantFailed:  []failedWant{{0, "delay-topic"}, {1, "value of 100 bytes dropped"}},
			wantReasons: map[string]float64{ReasonContract: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, nil)
				f.in.backoff = retry.Backoff{} // the defaults, on the virtual clock
				f.store.script, f.ix.script, f.w.script = tt.store, tt.index, tt.writer
				f.store.refuse, f.ix.refuse = tt.refusePut, tt.refuseAdd
				f.w.fail, f.w.limit = tt.writeFail, tt.limit

				start := time.Now()
				if err := f.in.handle(t.Context(), tt.msgs, testNow); err != nil {
					t.Fatalf("handle: %v", err)
				}
				if outage := max(tt.store.outage, tt.index.outage, tt.writer.outage); time.Since(start) < outage {
					t.Errorf("handle returned after %v, within the %v outage", time.Since(start), outage)
				}

				puts, stored := f.store.snapshot()
				if tt.wantPuts > 0 && puts != tt.wantPuts || len(stored) != tt.wantStored {
					t.Errorf("Put calls, tasks = %d, %d; want %d, %d", puts, len(stored), tt.wantPuts, tt.wantStored)
				}
				adds, entries := f.ix.snapshot()
				if tt.wantAdds > 0 && adds != tt.wantAdds || len(entries) != tt.wantIndexed {
					t.Errorf("Add calls, entries = %d, %d; want %d, %d", adds, len(entries), tt.wantAdds, tt.wantIndexed)
				}
				for _, e := range entries {
					i := slices.IndexFunc(stored, func(t payload.Task) bool { return t.ID == e.ID })
					if i < 0 || stored[i].Cancel || stored[i].ExecAt != e.ExecAt {
						t.Errorf("indexed %+v does not match a stored task", e)
					}
				}

				_, written := f.w.snapshot()
				if len(written) != len(tt.wantFailed) {
					t.Fatalf("failed topic got %d messages, want %d", len(written), len(tt.wantFailed))
				}
				for _, want := range tt.wantFailed {
					checkFailed(t, tt.msgs, written, want.offset, want.reason)
				}

				if got := counterValue(f.in.m.accepted); got != tt.wantAccepted {
					t.Errorf("accepted = %v, want %v", got, tt.wantAccepted)
				}
				if got := counterValue(f.in.m.cancels); got != tt.wantCancels {
					t.Errorf("cancels = %v, want %v", got, tt.wantCancels)
				}
				for _, r := range []string{ReasonContract, ReasonStore, ReasonIndex} {
					if got := counterValue(f.in.m.failed.WithLabelValues(r)); got != tt.wantReasons[r] {
						t.Errorf("failed{reason=%s} = %v, want %v", r, got, tt.wantReasons[r])
					}
				}
			})
		})
	}
}

// TestHandleOneBadEntryAmongMany narrows a batch-level refusal of the index
// down to the entries that cause it: the other tasks of the batch, from other
// producers, are indexed, and the narrowing costs a few calls per bad entry.
func TestHandleOneBadEntryAmongMany(t *testing.T) {
	f := newFixture(t, nil)
	bad := map[int64]bool{7: true, 500: true, 998: true}
	var msgs []payload.Message
	for i := range int64(1000) {
		m := msg(int(i%4), i, payload.HeaderTopic, "biz", payload.HeaderID, "t-"+strconv.FormatInt(i, 10),
			payload.HeaderAt, strconv.FormatInt(testNow.Add(time.Minute).UnixMilli()+i, 10))
		msgs = append(msgs, m)
	}
	f.ix.refuse = func(e zset.Entry) bool { return bad[e.ExecAt-testNow.Add(time.Minute).UnixMilli()] }
	if err := f.in.handle(t.Context(), msgs, testNow); err != nil {
		t.Fatal(err)
	}
	adds, entries := f.ix.snapshot()
	if len(entries) != 997 {
		t.Errorf("%d entries indexed, want 997", len(entries))
	}
	if adds > 3*2*10+1 {
		t.Errorf("%d Add calls to narrow 3 bad entries in 1000, want at most 61", adds)
	}
	_, written := f.w.snapshot()
	if len(written) != 3 {
		t.Fatalf("%d messages in the failed topic, want 3", len(written))
	}
	for off := range bad {
		checkFailed(t, msgs, written, off, "index: zset: bad entry")
	}
	if got := counterValue(f.in.m.accepted); got != 997 {
		t.Errorf("accepted = %v, want 997", got)
	}
}

// TestHandleEpochDueTimeFailsAlone is the sloppy producer of issue 11: eight
// valid tasks and one with delay-at 0 on one partition, through the real
// zset index (on miniredis) and the memory store. The eight are stored and
// indexed; the ninth alone goes to the failed topic, with the reason.
func TestHandleEpochDueTimeFailsAlone(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ix, err := zset.New(rdb, zset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store := payload.NewMemory()
	w := &fakeWriter{}
	in, err := New(Config{Brokers: []string{"b"}}, store, roles(ix), w)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var msgs []payload.Message
	for i := range int64(9) {
		at := strconv.FormatInt(now.Add(time.Minute).UnixMilli()+i, 10)
		switch i {
		case 4:
			at = "0"
		case 6:
			at = "1970-01-01T00:00:00Z"
		}
		msgs = append(msgs, msg(0, i, payload.HeaderTopic, "biz", payload.HeaderID, "epoch-"+strconv.FormatInt(i, 10), payload.HeaderAt, at))
	}
	if err := in.handle(t.Context(), msgs, now); err != nil {
		t.Fatal(err)
	}
	_, written := w.snapshot()
	if len(written) != 2 {
		t.Fatalf("%d messages in the failed topic, want 2", len(written))
	}
	checkFailed(t, msgs, written, 4, `delay-at: "0" is at or before the unix epoch`)
	checkFailed(t, msgs, written, 6, "is at or before the unix epoch")
	var refs []payload.Ref
	for i := range int64(9) {
		if i != 4 && i != 6 {
			refs = append(refs, payload.Ref{ID: payload.TaskID("epoch-" + strconv.FormatInt(i, 10)), ExecAt: now.Add(time.Minute).UnixMilli() + i})
		}
	}
	got, err := store.Get(t.Context(), refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, task := range got {
		if task == nil {
			t.Errorf("task %+v not stored", refs[i])
		}
	}
	keys, err := ix.Reader().DueKeys(t.Context(), now.Add(time.Hour).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	indexed := 0
	for _, k := range keys {
		entries, err := ix.Reader().Due(t.Context(), k, now.Add(time.Hour).UnixMilli(), 100)
		if err != nil {
			t.Fatal(err)
		}
		indexed += len(entries)
	}
	if indexed != 7 {
		t.Errorf("%d entries indexed, want 7", indexed)
	}
}

// TestHandleDelayAfterWithoutTimestamp: delay-after on a record without a
// timestamp (kafka-go reads 0 and -1 as a zero Time) would be timed by this
// process's clock, so a re-read would make a second task. It is refused
// alone, with a reason that says what to do.
func TestHandleDelayAfterWithoutTimestamp(t *testing.T) {
	f := newFixture(t, nil)
	bare := msg(0, 1, payload.HeaderTopic, "biz", payload.HeaderAfter, "90s")
	bare.Time = time.Time{}
	msgs := []payload.Message{valid(0), bare, valid(2)}
	if err := f.in.handle(t.Context(), msgs, testNow); err != nil {
		t.Fatal(err)
	}
	_, written := f.w.snapshot()
	if len(written) != 1 {
		t.Fatalf("%d messages in the failed topic, want 1", len(written))
	}
	checkFailed(t, msgs, written, 1, "delay-after needs a record timestamp (producer sent none); set one or use delay-at")
	if _, stored := f.store.snapshot(); len(stored) != 2 {
		t.Errorf("%d tasks stored, want 2", len(stored))
	}
}

// TestHandleOutageLogsOnce: a stall is one WARN line when it starts and one
// INFO line when it ends, not a line per retry.
func TestHandleOutageLogsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		f := newFixture(t, func(c *Config) {
			c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
		})
		f.in.backoff = retry.Backoff{}
		f.store.outage = 2 * time.Minute
		if err := f.in.handle(t.Context(), []payload.Message{valid(0), valid(1)}, testNow); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "stage stalled") ||
			!strings.Contains(lines[1], "level=INFO") || !strings.Contains(lines[1], "stage recovered") {
			t.Errorf("log lines:\n%s\nwant one WARN (stalled) and one INFO (recovered)", buf.String())
		}
		if calls, _ := f.store.snapshot(); calls < 20 {
			t.Errorf("%d Put calls in a 2-minute outage, want retries every few seconds", calls)
		}
	})
}

// checkFailed finds the failed-topic copy of the input at offset and checks
// it carries the original key, value and headers, the reason and the source.
func checkFailed(t *testing.T, inputs, written []payload.Message, offset int64, reason string) {
	t.Helper()
	i := slices.IndexFunc(inputs, func(m payload.Message) bool { return m.Offset == offset })
	j := slices.IndexFunc(written, func(m payload.Message) bool {
		v, _ := header(m, HeaderSourceOffset)
		return v == strconv.FormatInt(offset, 10)
	})
	if i < 0 || j < 0 {
		t.Fatalf("offset %d: input %d, failed %d", offset, i, j)
	}
	orig, got := inputs[i], written[j]
	if got.Topic != "delay-failed" {
		t.Errorf("offset %d: topic %q, want delay-failed", offset, got.Topic)
	}
	if string(got.Key) != string(orig.Key) {
		t.Errorf("offset %d: key %q, want %q", offset, got.Key, orig.Key)
	}
	if !strings.Contains(reason, "dropped") && string(got.Value) != string(orig.Value) {
		t.Errorf("offset %d: value %q, want %q", offset, got.Value, orig.Value)
	}
	for _, h := range orig.Headers {
		if v, ok := header(got, h.Key); !ok || v != string(h.Value) {
			t.Errorf("offset %d: header %s = %q, want %q", offset, h.Key, v, h.Value)
		}
	}
	if v, _ := header(got, payload.HeaderError); !strings.Contains(v, reason) {
		t.Errorf("offset %d: delay-error %q, want it to contain %q", offset, v, reason)
	}
	if v, _ := header(got, HeaderSourceTopic); v != orig.Topic {
		t.Errorf("offset %d: source topic %q, want %q", offset, v, orig.Topic)
	}
	if v, _ := header(got, HeaderSourcePartition); v != strconv.Itoa(orig.Partition) {
		t.Errorf("offset %d: source partition %q, want %d", offset, v, orig.Partition)
	}
}

func TestHandleStoredTasks(t *testing.T) {
	f := newFixture(t, nil)
	msgs := []payload.Message{valid(0), valid(1), valid(2), cancel(3)}
	msgs[2].Time = testNow.Add(-30 * time.Second) // delay-after counts from the message time
	if err := f.in.handle(t.Context(), msgs, testNow); err != nil {
		t.Fatal(err)
	}
	_, stored := f.store.snapshot()
	want := []int64{
		testNow.Add(time.Minute).UnixMilli(),
		testNow.Add(time.Minute + time.Second).UnixMilli(),
		testNow.Add(time.Minute).UnixMilli(), // 90s after a message 30s old
		testNow.Add(time.Hour).UnixMilli(),
	}
	for i, task := range stored {
		if task.ExecAt != want[i] {
			t.Errorf("task %d: ExecAt %d, want %d", i, task.ExecAt, want[i])
		}
		if task.Topic != "biz" && !task.Cancel {
			t.Errorf("task %d: topic %q", i, task.Topic)
		}
	}
	if !stored[3].Cancel || stored[3].Name != "task-3" || stored[3].ID != payload.TaskID("task-3") {
		t.Errorf("cancel stored as %+v", stored[3])
	}
	if stored[0].Name != payload.DerivedName("delay-input", 0, 0) {
		t.Errorf("derived name %q", stored[0].Name)
	}
	if v, ok := header(payload.Message{Headers: stored[0].Headers}, "trace"); !ok || v != "t1" {
		t.Errorf("pass-through header lost: %+v", stored[0].Headers)
	}
}

func TestHandleDuplicatesAreHarmless(t *testing.T) {
	// Re-delivery: the same input twice in one batch and again in the next.
	f := newFixture(t, nil)
	msgs := []payload.Message{valid(7), valid(7), cancel(8), cancel(8)}
	for range 2 {
		if err := f.in.handle(t.Context(), msgs, testNow); err != nil {
			t.Fatal(err)
		}
	}
	_, stored := f.store.snapshot()
	ids := map[payload.Ref]bool{}
	for _, task := range stored {
		ids[task.Ref()] = true
	}
	if len(ids) != 2 {
		t.Errorf("%d distinct (ID, ExecAt) stored, want 2", len(ids))
	}
}

func TestHandleStoppingDoesNotFail(t *testing.T) {
	// When ctx ends while the store is down, the batch is neither sent to
	// the failed topic nor reported stored: it stays uncommitted.
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		f.store.outage = time.Hour
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		err := f.in.handle(ctx, []payload.Message{valid(0), malformed(1)}, testNow)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errOutage) {
			t.Fatalf("handle = %v, want the deadline and the outage", err)
		}
		if calls, _ := f.w.snapshot(); calls != 0 {
			t.Errorf("failed topic written %d times while stopping", calls)
		}
	})
}

// TestFailedMessageReplacesStaleHeaders: the failed message carries the
// producer's headers but none that says where it came from (a producer's
// forged provenance), then the reason and ingest's own source position.
func TestFailedMessageReplacesStaleHeaders(t *testing.T) {
	f := newFixture(t, nil)
	m := msg(3, 9, payload.HeaderError, "old", HeaderSourceOffset, "1", "x", "y",
		"delay-replay-source", "delay-input/0/1", "delay-replay-of", "delay-failed/0/1", "delay-source-host", "h")
	got := f.in.failedMessage(m, "new")
	var keys []string
	for _, h := range got.Headers {
		keys = append(keys, h.Key+"="+string(h.Value))
	}
	want := []string{"x=y", "delay-error=new", "delay-source-topic=delay-input", "delay-source-partition=3", "delay-source-offset=9"}
	if !slices.Equal(keys, want) {
		t.Errorf("headers %v, want %v", keys, want)
	}
}

func TestConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		c := Config{Brokers: []string{"b:9092"}}
		c.setDefaults()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if c.GroupID != "delayq-ingest" || c.Input != "delay-input" || c.Slow != "delay-input-slow" || c.Failed != "delay-failed" {
			t.Errorf("names: %q %q %q %q", c.GroupID, c.Input, c.Slow, c.Failed)
		}
		if c.BatchSize != DefaultBatchSize || c.BatchBytes != DefaultBatchBytes || c.BatchWait != DefaultBatchWait || c.SlowRate != DefaultSlowRate || c.CallTimeout != DefaultCallTimeout {
			t.Errorf("batch: %+v", c)
		}
		if c.DrainTimeout != consumer.SessionTimeout/2 {
			t.Errorf("drain timeout %v, want half the session timeout %v", c.DrainTimeout, consumer.SessionTimeout)
		}
	})
	t.Run("every problem at once", func(t *testing.T) {
		c := Config{Input: "a", Slow: "a", BatchSize: -1, BatchBytes: -1, CallTimeout: -1, DrainTimeout: consumer.MaxDrain,
			Decode: payload.DecodeConfig{MaxDelay: -1}}
		c.setDefaults()
		err := c.Validate()
		if !errors.Is(err, ErrConfig) {
			t.Fatalf("Validate = %v, want ErrConfig", err)
		}
		for _, want := range []string{"brokers", "topics", "batch size", "batch bytes", "call timeout", "drain timeout", "decode: payload: MaxDelay"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %s", err, want)
			}
		}
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			if !errors.Is(e, ErrConfig) {
				t.Errorf("%q does not wrap ErrConfig", e)
			}
		}
	})
	t.Run("nil dependencies", func(t *testing.T) {
		_, err := New(Config{Brokers: []string{"b"}}, nil, nil, nil)
		for _, want := range []string{"store", "index", "writer"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("New error %v does not mention %s", err, want)
			}
		}
	})
	t.Run("own topics never allowed as destinations", func(t *testing.T) {
		f := newFixture(t, func(c *Config) {
			c.Input, c.Slow, c.Failed = "in-x", "slow-x", "failed-x"
			c.Decode.AllowTopic = func(s string) bool { return s != "forbidden" }
		})
		for topic, ok := range map[string]bool{"in-x": false, "slow-x": false, "failed-x": false, "delay-scan": false, "__consumer_offsets": false, "forbidden": false, "biz": true} {
			m := msg(0, 1, payload.HeaderTopic, topic, payload.HeaderAfter, "1s")
			_, err := payload.Decode(m, testNow, f.in.cfg.Decode)
			if (err == nil) != ok {
				t.Errorf("topic %s: Decode error %v, want allowed=%v", topic, err, ok)
			}
		}
	})
	t.Run("metrics are shared on one registry", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		cfg := Config{Brokers: []string{"b"}, Registerer: reg}
		a, err := New(cfg, &fakeStore{}, &fakeIndex{}, &fakeWriter{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(cfg, &fakeStore{}, &fakeIndex{}, &fakeWriter{})
		if err != nil {
			t.Fatalf("second New on the same registry: %v", err)
		}
		a.m.accepted.Inc()
		b.m.accepted.Inc()
		if got := counterValue(a.m.accepted); got != 2 {
			t.Errorf("shared counter = %v, want 2", got)
		}
		mfs, err := reg.Gather()
		// accepted, cancels, reschedules, failed, cancelled (shared with
		// the scanner), batch seconds, commit errors, master changes, and
		// the stage's stalled and stall seconds; delayq_ingest_lag and
		// delayq_stage_retries_total have no series before a batch.
		if err != nil || len(mfs) != 10 {
			t.Errorf("gathered %d metric families, %v; want 10", len(mfs), err)
		}
		// The scanner registers delayq_tasks_failed_total too; whoever comes
		// second shares it, so its help text must match.
		other := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_tasks_failed_total",
			Help: "Tasks that went to delay-failed (or were dropped), by reason.",
		}, []string{"reason"})
		var are prometheus.AlreadyRegisteredError
		if err := reg.Register(other); !errors.As(err, &are) {
			t.Errorf("registering the scanner's shape: %v, want AlreadyRegisteredError", err)
		}
		// So is delayq_tasks_cancelled_total.
		if err := reg.Register(metric.NewTasksCancelled()); !errors.As(err, &are) {
			t.Errorf("registering the scanner's delayq_tasks_cancelled_total: %v, want AlreadyRegisteredError", err)
		}
	})
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

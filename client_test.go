package delayq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/ingest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/topics"
	"github.com/delayq/delayq/zset"
)

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 678_901_234, time.UTC)

// fake is an in-process Kafka with one-partition input topics and a client
// on it whose clock reads testNow.
type fake struct {
	brokers []string
	c       *Client
}

func newFake(t *testing.T, cfg Config) *fake {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(1, topics.Input, topics.Slow))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cfg.Brokers = cluster.ListenAddrs()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.now = func() time.Time { return testNow }
	return &fake{brokers: cfg.Brokers, c: c}
}

// read returns the next message of partition 0 of topic after offset.
func (f *fake) read(t *testing.T, topic string, offset int64) kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: f.brokers, Topic: topic, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		t.Fatal(err)
	}
	m, err := r.ReadMessage(ctx)
	if err != nil {
		t.Fatalf("read %s@%d: %v", topic, offset, err)
	}
	return m
}

// TestSubmitWire submits tasks to the in-process Kafka, reads each back and
// checks that payload.Decode (what ingest runs) accepts it as the task
// submitted.
func TestSubmitWire(t *testing.T) {
	f := newFake(t, Config{Node: 5, SlowAfter: time.Hour})
	ms := testNow.UnixMilli()
	offsets := map[string]int64{}
	tests := []struct {
		name      string
		task      Task
		wantInput string
		wantAt    int64
	}{
		{
			name:      "at and id",
			task:      Task{ID: "order-1", Topic: "orders", At: testNow.Add(10 * time.Minute), Key: []byte("k1"), Value: []byte("v1")},
			wantInput: topics.Input,
			wantAt:    ms + 10*60_000,
		},
		{
			name:      "after",
			task:      Task{ID: "order-2", Topic: "orders", After: 90 * time.Second, Value: []byte("v2")},
			wantInput: topics.Input,
			wantAt:    ms + 90_000,
		},
		{
			name:      "due now",
			task:      Task{ID: "now", Topic: "orders"},
			wantInput: topics.Input,
			wantAt:    ms,
		},
		{
			name:      "past",
			task:      Task{ID: "past", Topic: "orders", At: testNow.Add(-time.Hour)},
			wantInput: topics.Input,
			wantAt:    ms - 3_600_000,
		},
		{
			name:      "exactly slow-after stays fast",
			task:      Task{ID: "edge", Topic: "orders", After: time.Hour},
			wantInput: topics.Input,
			wantAt:    ms + 3_600_000,
		},
		{
			name:      "beyond slow-after goes slow",
			task:      Task{ID: "far", Topic: "orders", After: time.Hour + time.Millisecond},
			wantInput: topics.Slow,
			wantAt:    ms + 3_600_001,
		},
		{
			name: "headers pass through",
			task: Task{ID: "h", Topic: "orders", After: time.Minute, Headers: []kafka.Header{
				{Key: "trace", Value: []byte("t-1")}, {Key: "delay-custom", Value: []byte("x")}, {Key: "empty", Value: nil},
			}},
			wantInput: topics.Input,
			wantAt:    ms + 60_000,
		},
		{
			name:      "generated id",
			task:      Task{Topic: "orders", After: time.Minute, Key: []byte("k")},
			wantInput: topics.Input,
			wantAt:    ms + 60_000,
		},
		{
			name:      "sub-millisecond at is truncated",
			task:      Task{ID: "trunc", Topic: "orders", At: time.UnixMilli(ms + 5).Add(999 * time.Microsecond)},
			wantInput: topics.Input,
			wantAt:    ms + 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := f.c.Submit(t.Context(), tt.task)
			if err != nil {
				t.Fatal(err)
			}
			if r.Input != tt.wantInput {
				t.Errorf("input %s, want %s", r.Input, tt.wantInput)
			}
			if r.At.UnixMilli() != tt.wantAt || r.At.Location() != time.UTC || r.At.Nanosecond()%1e6 != 0 {
				t.Errorf("receipt at %v, want %v in UTC, whole ms", r.At, time.UnixMilli(tt.wantAt))
			}
			if tt.task.ID != "" && r.ID != tt.task.ID {
				t.Errorf("receipt id %q, want %q", r.ID, tt.task.ID)
			}
			m := f.read(t, r.Input, offsets[r.Input])
			offsets[r.Input]++
			if !m.Time.Equal(testNow.Truncate(time.Millisecond)) {
				t.Errorf("message time %v, want %v (kafka-go sends 0 unless stamped)", m.Time, testNow)
			}
			got, err := payload.Decode(record.ToMessage(m), testNow, payload.DecodeConfig{})
			if err != nil {
				t.Fatalf("Decode rejects the client's message: %v", err)
			}
			want := payload.Task{
				ID: payload.TaskID(r.ID), Name: r.ID, Topic: tt.task.Topic, ExecAt: tt.wantAt,
				Key: tt.task.Key, Value: tt.task.Value, Headers: record.ToHeaders(tt.task.Headers),
			}
			if err := sameTask(got, want); err != nil {
				t.Error(err)
			}
			if tt.task.ID == "" {
				n, err := strconv.ParseUint(r.ID, 10, 64)
				if err != nil || got.ID != n {
					t.Errorf("generated id %q: want a decimal snowflake id that TaskID maps to itself, got id %d", r.ID, got.ID)
				}
				if node := (n >> 12) & 1023; node != 5 {
					t.Errorf("generated id %q carries node %d, want 5", r.ID, node)
				}
			}
		})
	}
}

func sameTask(got, want payload.Task) error {
	var diffs []string
	if got.ID != want.ID || got.Name != want.Name {
		diffs = append(diffs, fmt.Sprintf("id %d/%q, want %d/%q", got.ID, got.Name, want.ID, want.Name))
	}
	if got.Topic != want.Topic || got.ExecAt != want.ExecAt || got.Cancel != want.Cancel {
		diffs = append(diffs, fmt.Sprintf("topic %q at %d cancel %v, want %q at %d cancel %v",
			got.Topic, got.ExecAt, got.Cancel, want.Topic, want.ExecAt, want.Cancel))
	}
	if string(got.Key) != string(want.Key) || string(got.Value) != string(want.Value) {
		diffs = append(diffs, fmt.Sprintf("key/value %q/%q, want %q/%q", got.Key, got.Value, want.Key, want.Value))
	}
	if !slices.EqualFunc(got.Headers, want.Headers, func(a, b payload.Header) bool {
		return a.Key == b.Key && string(a.Value) == string(b.Value)
	}) {
		diffs = append(diffs, fmt.Sprintf("headers %v, want %v", got.Headers, want.Headers))
	}
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "; "))
	}
	return nil
}

func TestSlowAfter(t *testing.T) {
	tests := []struct {
		name      string
		slowAfter time.Duration
		after     time.Duration
		want      string
	}{
		{"default 1h, 59m", 0, 59 * time.Minute, topics.Input},
		{"default 1h, 61m", 0, 61 * time.Minute, topics.Slow},
		{"custom 1m, 2m", time.Minute, 2 * time.Minute, topics.Slow},
		{"never, 30 days", -1, 720 * time.Hour, topics.Input},
	}
	f := newFake(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Config{Brokers: f.brokers, SlowAfter: tt.slowAfter})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r, err := c.Submit(t.Context(), Task{Topic: "t", After: tt.after})
			if err != nil {
				t.Fatal(err)
			}
			if r.Input != tt.want {
				t.Errorf("input %s, want %s", r.Input, tt.want)
			}
		})
	}
}

func TestCancelWire(t *testing.T) {
	f := newFake(t, Config{})
	at := testNow.Add(3 * time.Hour) // far tasks go slow; their cancel goes to the fast input
	if err := f.c.Cancel(t.Context(), "order-7", at); err != nil {
		t.Fatal(err)
	}
	m := f.read(t, topics.Input, 0)
	got, err := payload.Decode(record.ToMessage(m), testNow, payload.DecodeConfig{})
	if err != nil {
		t.Fatalf("Decode rejects the cancel: %v", err)
	}
	want := payload.Task{ID: payload.TaskID("order-7"), Name: "order-7", ExecAt: at.UnixMilli(), Cancel: true}
	if err := sameTask(got, want); err != nil {
		t.Error(err)
	}
}

func TestCancelByIDAndRescheduleWire(t *testing.T) {
	f := newFake(t, Config{})
	at := testNow.Add(3 * time.Hour)
	if err := f.c.CancelByID(t.Context(), "order-7"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Reschedule(t.Context(), "order-8", at); err != nil {
		t.Fatal(err)
	}
	for i, want := range []payload.Task{
		{ID: payload.TaskID("order-7"), Name: "order-7", Control: payload.ControlCancelID},
		{ID: payload.TaskID("order-8"), Name: "order-8", ExecAt: at.UnixMilli(), Control: payload.ControlReschedule},
	} {
		m := f.read(t, topics.Input, int64(i))
		got, err := payload.Decode(record.ToMessage(m), testNow, payload.DecodeConfig{})
		if err != nil {
			t.Fatalf("Decode rejects message %d: %v", i, err)
		}
		if err := sameTask(got, want); err != nil {
			t.Error(err)
		}
		if got.Control != want.Control {
			t.Errorf("message %d control %d, want %d", i, got.Control, want.Control)
		}
		if string(m.Key) != want.Name {
			t.Errorf("message %d key %q, want the id (one partition per id)", i, m.Key)
		}
	}
	for _, err := range []error{
		f.c.CancelByID(t.Context(), ""),
		f.c.Reschedule(t.Context(), "", at),
		f.c.Reschedule(t.Context(), "x", time.Time{}),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("err %v, want ErrInvalid", err)
		}
	}
}

func TestReplaceWire(t *testing.T) {
	f := newFake(t, Config{})
	at := testNow.Add(2 * time.Hour)
	r, err := f.c.Replace(t.Context(), Task{ID: "order-9", Topic: "orders", At: at, Key: []byte("k"), Value: []byte("v2"),
		Headers: []kafka.Header{{Key: "x", Value: []byte("y")}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "order-9" || r.At.UnixMilli() != at.UnixMilli() || r.Input != topics.Slow {
		t.Errorf("receipt %+v, want order-9 at %v on %s", r, at, topics.Slow)
	}
	got, err := payload.Decode(record.ToMessage(f.read(t, topics.Slow, 0)), testNow, payload.DecodeConfig{})
	if err != nil {
		t.Fatalf("Decode rejects the replace: %v", err)
	}
	want := payload.Task{ID: payload.TaskID("order-9"), Name: "order-9", Topic: "orders", ExecAt: at.UnixMilli(),
		Key: []byte("k"), Value: []byte("v2"), Headers: []payload.Header{{Key: "x", Value: []byte("y")}}}
	if err := sameTask(got, want); err != nil {
		t.Error(err)
	}
	if got.Control != payload.ControlReplace {
		t.Errorf("control %d, want ControlReplace", got.Control)
	}
	for _, task := range []Task{
		{Topic: "orders", At: at},
		{ID: "x", Topic: "orders", At: at, Every: time.Hour, Count: 2},
		{ID: "x", Topic: "orders", At: at, Headers: []kafka.Header{{Key: payload.HeaderCron, Value: []byte("@daily")}}},
		{ID: "x", At: at},
	} {
		if _, err := f.c.Replace(t.Context(), task); !errors.Is(err, ErrInvalid) {
			t.Errorf("Replace(%+v) = %v, want ErrInvalid", task, err)
		}
	}
}

func TestInvalid(t *testing.T) {
	f := newFake(t, Config{})
	long := strings.Repeat("x", payload.MaxNameLen+1)
	tests := []struct {
		name string
		task Task
		want []string // substrings of the error
	}{
		{"no topic", Task{}, []string{"topic is empty"}},
		{"illegal topic", Task{Topic: "a b"}, []string{`topic "a b" is not a legal`}},
		{"internal topic", Task{Topic: "delay-scan"}, []string{"internal topic"}},
		{"kafka internal topic", Task{Topic: "__consumer_offsets"}, []string{"internal topic"}},
		{"at and after", Task{Topic: "t", At: testNow, After: time.Second}, []string{"not both"}},
		{"negative after", Task{Topic: "t", After: -time.Second}, []string{"negative"}},
		{"before 1970", Task{Topic: "t", At: time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC)}, []string{"At: ", "at or before the unix epoch"}},
		{"long id", Task{Topic: "t", ID: long}, []string{"129 bytes"}},
		{"control header", Task{Topic: "t", Headers: []kafka.Header{{Key: "delay-at", Value: []byte("1")}}}, []string{`header "delay-at"`}},
		{"every problem at once", Task{ID: long, After: -1}, []string{"topic is empty", "129 bytes", "negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.c.Submit(t.Context(), tt.task)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err %q spans lines", err)
			}
		})
	}
	for _, tt := range []struct {
		name string
		id   string
		at   time.Time
	}{
		{"no id", "", testNow},
		{"no at", "x", time.Time{}},
		{"long id", long, testNow},
	} {
		t.Run("cancel "+tt.name, func(t *testing.T) {
			if err := f.c.Cancel(t.Context(), tt.id, tt.at); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"zero", Config{}, nil},
		{"node 1023", Config{Node: 1023}, nil},
		{"node 1024", Config{Node: 1024}, []string{"Node 1024"}},
		{"negative node", Config{Node: -1}, []string{"Node -1"}},
		{"bad broker", Config{Brokers: []string{"localhost"}}, []string{`"localhost" is not host:port`}},
		{"all", Config{Node: -1, Brokers: []string{"x"}, BatchTimeout: -1}, []string{"Node", "host:port", "BatchTimeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			if err == nil {
				t.Fatal("New accepted the config")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestClose(t *testing.T) {
	f := newFake(t, Config{})
	if err := f.c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := f.c.Submit(t.Context(), Task{Topic: "t"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
	if err := f.c.Cancel(t.Context(), "x", testNow); !errors.Is(err, ErrClosed) {
		t.Errorf("Cancel after Close: %v, want ErrClosed", err)
	}
}

func TestNewIDUnique(t *testing.T) {
	c, err := New(Config{Node: 9})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := map[string]bool{}
	for range 10_000 {
		id := c.NewID()
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		if n, err := strconv.ParseUint(id, 10, 64); err != nil || payload.TaskID(id) != n {
			t.Fatalf("id %q is not a canonical decimal uint64", id)
		}
	}
}

// TestRealStack submits tasks and a cancel through real Kafka and runs the
// real ingester on them (HBase store on a fresh table, zset index under a
// fresh Redis prefix): every task is stored as submitted and indexed, and
// the cancelled one carries the cancel marker.
func TestRealStack(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	brokers := stacktest.Kafka(t)
	raddr := stacktest.Redis(t)
	zk := stacktest.HBase(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	nanos := time.Now().UnixNano()
	suffix := strconv.FormatInt(nanos, 10)
	input, slow, failed := "dqtest-client-in-"+suffix, "dqtest-client-slow-"+suffix, "dqtest-client-failed-"+suffix
	if err := admin.Ensure(ctx, brokers, nil, []admin.Spec{
		{Name: input, Partitions: 2}, {Name: slow, Partitions: 1}, {Name: failed, Partitions: 1},
	}); err != nil {
		t.Fatal(err)
	}
	const salts = 2
	table := "delayq_test_client_" + suffix
	if err := hbase.CreateTable(ctx, zk, "", table, salts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stacktest.DropTable(t, zk, table) })
	store, err := hbase.New(hbase.Config{ZK: zk, Table: table, Salts: salts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	rdb := redis.NewClient(&redis.Options{Addr: raddr})
	prefix := "dqtest-client-" + suffix
	t.Cleanup(func() { stacktest.DropKeys(t, rdb, prefix); rdb.Close() })
	ix, err := zset.New(rdb, zset.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}

	c, err := New(Config{Brokers: brokers, Node: 11, Input: input, Slow: slow})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	biz := "dqtest-client-biz-" + suffix
	tasks := []Task{
		{Topic: biz, After: 10 * time.Minute, Key: []byte("k0"), Value: []byte("generated id"),
			Headers: []kafka.Header{{Key: "trace", Value: []byte("t0")}}},
		{ID: "named-" + suffix, Topic: biz, At: time.Now().Add(5 * time.Minute), Value: []byte("named")},
		{ID: "slow-" + suffix, Topic: biz, After: 3 * time.Hour, Value: []byte("slow")},
		{ID: "cancelled-" + suffix, Topic: biz, After: 20 * time.Minute, Value: []byte("to cancel")},
	}
	var receipts []Receipt
	for _, task := range tasks {
		r, err := c.Submit(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		receipts = append(receipts, r)
	}
	if receipts[2].Input != slow {
		t.Errorf("a task 3 h out went to %s, want %s", receipts[2].Input, slow)
	}
	if err := c.Cancel(ctx, receipts[3].ID, receipts[3].At); err != nil {
		t.Fatal(err)
	}

	w := producer.New(producer.Config{Brokers: brokers})
	defer w.Close()
	in, err := ingest.New(ingest.Config{
		Brokers: brokers, GroupID: "dqtest-client-" + suffix, Input: input, Slow: slow, Failed: failed,
	}, store, struct {
		*zset.Writer
		*zset.OpFlags
	}{ix.Writer(), ix.OpFlags()}, w)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("ingest: %v", err)
		}
	}()

	refs := make([]payload.Ref, len(receipts))
	for i, r := range receipts {
		refs[i] = payload.Ref{ID: payload.TaskID(r.ID), ExecAt: r.At.UnixMilli()}
	}
	// Ingest stores the rows first, then indexes them: wait for both.
	var rows []*payload.Task
	var pending []bool
	for {
		rows, err = store.Get(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		pending = pending[:0]
		for _, r := range refs {
			ok, err := ix.Maintenance().Pending(ctx, zset.Entry{ID: r.ID, ExecAt: r.ExecAt})
			if err != nil {
				t.Fatal(err)
			}
			pending = append(pending, ok)
		}
		// The cancelled task's entry is forgotten by ingest once its row
		// carries the marker (pending counts only tasks still to deliver).
		if !slices.Contains(rows, nil) && rows[3].Cancel && rows[3].Topic != "" && !slices.Contains(pending[:3], false) && !pending[3] {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ingest did not store and index every task and forget the cancelled one: rows %v, pending in Redis %v", rows, pending)
		case <-time.After(200 * time.Millisecond):
		}
	}
	for i, task := range tasks {
		want := payload.Task{
			ID: refs[i].ID, Name: receipts[i].ID, Topic: biz, ExecAt: refs[i].ExecAt,
			Key: task.Key, Value: task.Value, Headers: record.ToHeaders(task.Headers), Cancel: i == 3,
		}
		if err := sameTask(*rows[i], want); err != nil {
			t.Errorf("task %d: %v", i, err)
		}
	}
}

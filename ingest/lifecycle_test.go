package ingest

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// lifecycleFixture is an ingester on the in-memory store, which keeps id
// rows, so ops by id are accepted.
type lifecycleFixture struct {
	in  *Ingester
	st  *payload.Memory
	ix  *fakeIndex
	w   *fakeWriter
	off int64
}

// flagIndex is a fakeIndex with op flags.
type flagIndex struct {
	*fakeIndex
	mu    sync.Mutex
	flags map[uint64]bool
	ttls  []time.Duration // of every FlagOps call
}

func (f *flagIndex) FlagOps(ctx context.Context, ids []uint64, ttl time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ttls = append(f.ttls, ttl)
	for _, id := range ids {
		f.flags[id] = true
	}
	return nil
}

func (f *flagIndex) Flagged(ctx context.Context, ids []uint64) ([]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]bool, len(ids))
	for i, id := range ids {
		out[i] = f.flags[id]
	}
	return out, nil
}

func newLifecycleFixture(t *testing.T, flags bool) *lifecycleFixture {
	t.Helper()
	ev := &events{}
	f := &lifecycleFixture{st: payload.NewMemory(), ix: &fakeIndex{ev: ev}, w: &fakeWriter{ev: ev}}
	var ix Index = f.ix
	if flags {
		ix = &flagIndex{fakeIndex: f.ix, flags: map[uint64]bool{}}
	}
	in, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Registerer: prometheus.NewRegistry(),
		RescheduleGrace: lcGrace, Logger: slog.New(slog.DiscardHandler)}, f.st, ix, f.w)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.in = in
	return f
}

// lcGrace is the fixture's RescheduleGrace: a reschedule whose task is not
// stored holds its batch that long.
const lcGrace = time.Second

var lcBase = time.Now().Add(time.Hour).Truncate(time.Second)

func lcAt(sec int) string {
	return strconv.FormatInt(lcBase.Add(time.Duration(sec)*time.Second).UnixMilli(), 10)
}

func (f *lifecycleFixture) submit(id string, sec int) payload.Message {
	f.off++
	return msg(0, f.off, payload.HeaderTopic, "biz", payload.HeaderID, id, payload.HeaderAt, lcAt(sec), "trace", id)
}

func (f *lifecycleFixture) cancelID(id string) payload.Message {
	f.off++
	return msg(1, f.off, payload.HeaderOp, payload.OpCancel, payload.HeaderID, id)
}

func (f *lifecycleFixture) cancelAt(id string, sec int) payload.Message {
	f.off++
	return msg(1, f.off, payload.HeaderOp, payload.OpCancel, payload.HeaderID, id, payload.HeaderAt, lcAt(sec))
}

func (f *lifecycleFixture) reschedule(id string, sec int) payload.Message {
	f.off++
	return msg(1, f.off, payload.HeaderOp, payload.OpReschedule, payload.HeaderID, id, payload.HeaderAt, lcAt(sec))
}

func (f *lifecycleFixture) replace(id string, sec int) payload.Message {
	f.off++
	return msg(1, f.off, payload.HeaderOp, payload.OpReplace, payload.HeaderTopic, "biz", payload.HeaderID, id, payload.HeaderAt, lcAt(sec))
}

func (f *lifecycleFixture) handle(t *testing.T, msgs ...payload.Message) {
	t.Helper()
	if err := f.in.handle(t.Context(), msgs, time.Now()); err != nil {
		t.Fatalf("handle: %v", err)
	}
}

// live returns what the scanner would deliver: per task name, the due times
// of its index entries whose row exists and carries no cancel marker.
func (f *lifecycleFixture) live(t *testing.T) map[string][]int64 {
	t.Helper()
	_, entries := f.ix.snapshot()
	seen := map[zset.Entry]bool{}
	out := map[string][]int64{}
	for _, e := range entries {
		if seen[e] {
			continue
		}
		seen[e] = true
		rows, err := f.st.Get(context.Background(), []payload.Ref{{ID: e.ID, ExecAt: e.ExecAt}})
		if err != nil {
			t.Fatal(err)
		}
		switch r := rows[0]; {
		case r != nil && !r.Cancel && payload.IsCheck(*r):
			out["check:"+r.Name] = nil // a reschedule's check row, due after its grace: it fails then
		case r != nil && !r.Cancel:
			out[r.Name] = append(out[r.Name], e.ExecAt)
		}
	}
	return out
}

// dead returns the index entries whose row the scanner would drop (a
// cancel marker, no row): what ingest should have forgotten.
func (f *lifecycleFixture) dead(t *testing.T) []zset.Entry {
	t.Helper()
	_, entries := f.ix.snapshot()
	var out []zset.Entry
	for _, e := range entries {
		rows, err := f.st.Get(context.Background(), []payload.Ref{{ID: e.ID, ExecAt: e.ExecAt}})
		if err != nil {
			t.Fatal(err)
		}
		if rows[0] == nil || rows[0].Cancel {
			out = append(out, e)
		}
	}
	return out
}

func (f *lifecycleFixture) failed(t *testing.T) map[string]string {
	t.Helper()
	_, msgs := f.w.snapshot()
	out := map[string]string{}
	for _, m := range msgs {
		id, _ := header(m, payload.HeaderID)
		reason, _ := header(m, payload.HeaderError)
		out[id] = reason
	}
	return out
}

func TestLifecycleOps(t *testing.T) {
	ms := func(sec int) int64 { return lcBase.Add(time.Duration(sec) * time.Second).UnixMilli() }
	tests := []struct {
		name       string
		batches    func(f *lifecycleFixture) [][]payload.Message
		live       map[string][]int64
		failed     map[string]string // name → substring of the reason
		wantPhases map[string]payload.Phase
	}{
		{
			name: "cancel by id after the task",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10), f.submit("b", 10)}, {f.cancelID("a")}}
			},
			live:       map[string][]int64{"b": {ms(10)}},
			wantPhases: map[string]payload.Phase{"a": payload.PhaseCancelled, "b": payload.PhasePending},
		},
		{
			name: "cancel by id before the task",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.cancelID("a")}, {f.submit("a", 10), f.submit("b", 10)}}
			},
			live:       map[string][]int64{"b": {ms(10)}},
			wantPhases: map[string]payload.Phase{"a": payload.PhaseCancelled},
		},
		{
			name: "cancel by id and due time after the task",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10), f.submit("b", 10)}, {f.cancelAt("a", 10), f.cancelAt("b", 11)}}
			},
			live: map[string][]int64{"b": {ms(10)}},
		},
		{
			name: "cancel by id and due time before the task",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.cancelAt("a", 10)}, {f.submit("a", 10), f.submit("b", 10)}}
			},
			live: map[string][]int64{"b": {ms(10)}},
		},
		{
			name: "cancel by id and due time in the task's batch",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.cancelAt("a", 10), f.submit("a", 10)}}
			},
			live: map[string][]int64{},
		},
		{
			name: "cancel by id in the task's batch",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.cancelID("a"), f.submit("a", 10)}}
			},
			live: map[string][]int64{},
		},
		{
			name: "cancel by id after a reschedule",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10)}, {f.reschedule("a", 20)}, {f.cancelID("a")}}
			},
			live: map[string][]int64{},
		},
		{
			name: "reschedule later and earlier",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10), f.submit("b", 10)}, {f.reschedule("a", 30), f.reschedule("b", 5)}}
			},
			live:       map[string][]int64{"a": {ms(30)}, "b": {ms(5)}},
			wantPhases: map[string]payload.Phase{"a": payload.PhasePending},
		},
		{
			name: "reschedule twice",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10)}, {f.reschedule("a", 30)}, {f.reschedule("a", 40)}}
			},
			live: map[string][]int64{"a": {ms(40)}},
		},
		{
			name: "reschedule twice in one batch",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10)}, {f.reschedule("a", 30), f.reschedule("a", 40)}}
			},
			live: map[string][]int64{"a": {ms(40)}},
		},
		{
			name: "reschedule before the task",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.reschedule("a", 30)}, {f.submit("a", 10)}}
			},
			live: map[string][]int64{"a": {ms(30)}},
		},
		{
			name: "replace after the task",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10)}, {f.replace("a", 20)}}
			},
			live:       map[string][]int64{"a": {ms(20)}},
			wantPhases: map[string]payload.Phase{"a": payload.PhasePending},
		},
		{
			name: "replace at the same time before the task, read again after it",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				r := f.replace("a", 10)
				return [][]payload.Message{{r}, {f.submit("a", 10)}, {r}}
			},
			live: map[string][]int64{"a": {ms(10)}},
		},
		{
			name: "replace then reschedule in one batch",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10)}, {f.replace("a", 20), f.reschedule("a", 30)}}
			},
			live: map[string][]int64{"a": {ms(30)}},
		},
		{
			name: "replace of an id cancelled by id",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10)}, {f.cancelID("a")}, {f.replace("a", 20)}}
			},
			live:   map[string][]int64{},
			failed: map[string]string{"a": `id cancelled: replace of delay-id "a" refused`},
		},
		{
			// The docs' o-42: cancelled by id, then submitted again.
			name: "submit recorded after a cancel by id reuses the id",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				s := f.submit("a", 10)
				s.Time = testNow.Add(time.Second)
				return [][]payload.Message{{f.submit("a", 20)}, {f.cancelID("a")}, {s}, {s}}
			},
			live: map[string][]int64{},
			failed: map[string]string{"a": `id cancelled: submit of delay-id "a" refused: the id was cancelled by id alone at ` +
				payload.FormatTime(testNow.UnixMilli()) + ` and a task submitted with it after the cancel is refused until ` +
				payload.FormatTime(testNow.Add(payload.DefaultMaxDelay+defaultRetention).UnixMilli())},
			wantPhases: map[string]payload.Phase{"a": payload.PhaseCancelled},
		},
		{
			// A cancel that overtook its task (another partition): the
			// task, recorded before it, is cancelled without a word.
			name: "submit recorded before a cancel by id handled after it",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				s := f.submit("a", 10)
				s.Time = testNow.Add(-time.Second)
				return [][]payload.Message{{f.cancelID("a")}, {s}, {s}}
			},
			live: map[string][]int64{},
		},
		{
			// The reschedule is young when handled and waits; the task is
			// recorded more than the grace after it: it stays.
			name: "reschedule of an id whose task comes after the grace",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				r, s := f.reschedule("a", 30), f.submit("a", 10)
				r.Time = time.Now()
				s.Time = r.Time.Add(2 * lcGrace)
				return [][]payload.Message{{r}, {s}}
			},
			// The reschedule waits; its check row fails it when its grace
			// ends, and its task, recorded after that, stays.
			live: map[string][]int64{"a": {ms(10)}, "check:a": nil},
		},
		{
			name: "reschedule read again after it failed, its task in between",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				r := f.reschedule("a", 30)
				r.Time = time.Now().Add(-time.Minute)
				return [][]payload.Message{{r}, {f.submit("a", 10)}, {r}}
			},
			live:   map[string][]int64{"a": {ms(10)}},
			failed: map[string]string{"a": `reschedule: unknown delay-id "a": no task with this id was stored within 1s`},
		},
		{
			name: "reschedule in the task's batch",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.reschedule("a", 30), f.submit("a", 10)}}
			},
			live: map[string][]int64{"a": {ms(30)}},
		},
		{
			name: "task read again after its reschedule",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				s := f.submit("a", 10)
				return [][]payload.Message{{s}, {f.reschedule("a", 30)}, {s}}
			},
			live: map[string][]int64{"a": {ms(30)}},
		},
		{
			name: "reschedule read again",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				r := f.reschedule("a", 30)
				return [][]payload.Message{{f.submit("a", 10)}, {r}, {r}}
			},
			live: map[string][]int64{"a": {ms(30)}},
		},
		{
			name: "reschedule of a cancelled task",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				return [][]payload.Message{{f.submit("a", 10)}, {f.cancelID("a")}, {f.reschedule("a", 30)}}
			},
			live:   map[string][]int64{},
			failed: map[string]string{"a": `reschedule: delay-id "a" is cancelled`},
		},
		{
			name: "reschedule of a task cancelled by due time",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				f.off++
				c := msg(1, f.off, payload.HeaderOp, payload.OpCancel, payload.HeaderID, "a", payload.HeaderAt, lcAt(10))
				return [][]payload.Message{{f.submit("a", 10)}, {c}, {f.reschedule("a", 30)}}
			},
			live:   map[string][]int64{},
			failed: map[string]string{"a": `reschedule: delay-id "a" is cancelled`},
		},
		{
			name: "reschedule of an unknown id",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				r := f.reschedule("a", 30)
				r.Time = time.Now().Add(-time.Minute)
				return [][]payload.Message{{r}, {f.submit("a", 10)}}
			},
			live:   map[string][]int64{"a": {ms(10)}},
			failed: map[string]string{"a": `reschedule: unknown delay-id "a": no task with this id was stored`},
		},
		{
			name: "reschedule of a delivered task",
			batches: func(f *lifecycleFixture) [][]payload.Message {
				f.off++
				past := strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10)
				s := msg(0, f.off, payload.HeaderTopic, "biz", payload.HeaderID, "a", payload.HeaderAt, past)
				return [][]payload.Message{{s}, {f.reschedule("a", 30)}, {s}}
			},
			live:   map[string][]int64{"a": {time.Now().Add(-time.Minute).UnixMilli()}}, // replaced below
			failed: map[string]string{"a": "delivered or being delivered"},
		},
	}
	for _, tt := range tests {
		for _, flags := range []bool{false, true} {
			name := tt.name
			if flags {
				name += " with op flags"
			}
			t.Run(name, func(t *testing.T) {
				f := newLifecycleFixture(t, flags)
				for _, b := range tt.batches(f) {
					f.handle(t, b...)
				}
				live := f.live(t)
				if tt.name == "reschedule of a delivered task" {
					if len(live["a"]) != 1 || live["a"][0] > time.Now().UnixMilli() {
						t.Errorf("live = %v, want a once at its past time", live)
					}
				} else if !equalLive(live, tt.live) {
					t.Errorf("live = %v, want %v", live, tt.live)
				}
				if dead := f.dead(t); len(dead) > 0 {
					t.Errorf("index holds %d entries of cancelled or absent rows %v: the backlog counts them", len(dead), dead)
				}
				failed := f.failed(t)
				if len(failed) != len(tt.failed) {
					t.Errorf("failed = %v, want %v", failed, tt.failed)
				}
				for id, want := range tt.failed {
					if !strings.Contains(failed[id], want) {
						t.Errorf("failed[%s] = %q, want it to contain %q", id, failed[id], want)
					}
				}
				for name, want := range tt.wantPhases {
					got, err := payload.State(t.Context(), f.st, name, time.Now())
					if err != nil || got.Phase != want {
						t.Errorf("State(%s) = %+v, %v; want %s", name, got, err, want)
					}
				}
			})
		}
	}
}

func equalLive(a, b map[string][]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w := b[k]
		if len(v) != len(w) {
			return false
		}
		for i := range v {
			if v[i] != w[i] {
				return false
			}
		}
	}
	return true
}

// TestOpFlagTTLSaturates: with --max-delay 2562047h (near the largest
// Duration) an op by id flags its id with a positive TTL, not one that
// wrapped to a negative number (which Redis takes as no expiry).
func TestOpFlagTTLSaturates(t *testing.T) {
	ev := &events{}
	ix := &flagIndex{fakeIndex: &fakeIndex{ev: ev}, flags: map[uint64]bool{}}
	in, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Decode: payload.DecodeConfig{MaxDelay: 2562047 * time.Hour},
		Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)}, payload.NewMemory(), ix, &fakeWriter{ev: ev})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.handle(t.Context(), []payload.Message{msg(1, 1, payload.HeaderOp, payload.OpCancel, payload.HeaderID, "x")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(ix.ttls) != 1 || ix.ttls[0] <= 0 {
		t.Fatalf("FlagOps TTLs %v, want one positive", ix.ttls)
	}
}

// TestOpFlagTTL: the op flag TTL is the maximum delay plus the retention,
// saturating instead of wrapping to a negative TTL (which Redis would take
// as none) for a maximum delay or retention near the largest Duration.
func TestOpFlagTTL(t *testing.T) {
	for _, tt := range []struct {
		maxDelay, retention, want time.Duration
	}{
		{0, 0, payload.DefaultMaxDelay + 7*24*time.Hour},
		{time.Hour, 24 * time.Hour, 25 * time.Hour},
		{2562047 * time.Hour, 0, math.MaxInt64},
		{time.Hour, math.MaxInt64, math.MaxInt64},
	} {
		if got := opFlagTTL(tt.maxDelay, tt.retention); got != tt.want {
			t.Errorf("opFlagTTL(%v, %v) = %v, want %v", tt.maxDelay, tt.retention, got, tt.want)
		}
	}
}

// TestReplaceKeepsItsContent: a replace due at its task's time, read
// before the task, is what is delivered, not the late task's value.
func TestReplaceKeepsItsContent(t *testing.T) {
	f := newLifecycleFixture(t, true)
	r, s := f.replace("a", 10), f.submit("a", 10)
	f.handle(t, r)
	f.handle(t, s)
	_, entries := f.ix.snapshot()
	var values []string
	for _, e := range entries {
		rows, err := f.st.Get(t.Context(), []payload.Ref{{ID: e.ID, ExecAt: e.ExecAt}})
		if err != nil {
			t.Fatal(err)
		}
		if rows[0] != nil && !rows[0].Cancel {
			values = append(values, string(rows[0].Value))
		}
	}
	if len(values) != 1 || values[0] != string(r.Value) {
		t.Errorf("deliverable values %q, want only the replace's %q", values, r.Value)
	}
}

// TestReusedIDState: payload.State of the docs' o-42 after its cancel by
// id (the cancelled task's due time, the block dated from the cancel's
// record time) and after a refused reuse (whose due time d:s now holds:
// labelled Reused).
func TestReusedIDState(t *testing.T) {
	f := newLifecycleFixture(t, true)
	f.handle(t, f.submit("o-42", 10))
	f.handle(t, f.cancelID("o-42"))
	want := payload.TaskState{Phase: payload.PhaseCancelled, At: lcBase.Add(10 * time.Second).UnixMilli(),
		CancelledByID: testNow.UnixMilli(), BlockedUntil: testNow.Add(payload.DefaultCancelBlock).UnixMilli()}
	if got, err := payload.State(t.Context(), f.st, "o-42", time.Now()); err != nil || got != want {
		t.Errorf("after the cancel: %+v, %v; want %+v", got, err, want)
	}
	s := f.submit("o-42", 20)
	s.Time = testNow.Add(time.Minute)
	f.handle(t, s)
	want.At, want.Reused = lcBase.Add(20*time.Second).UnixMilli(), true
	if got, err := payload.State(t.Context(), f.st, "o-42", time.Now()); err != nil || got != want {
		t.Errorf("after the reuse: %+v, %v; want %+v", got, err, want)
	}
	if failed := f.failed(t); !strings.HasPrefix(failed["o-42"], "id cancelled: submit") {
		t.Errorf("failed %v, want the reuse refused", failed)
	}
}

// TestRescheduleReadAfterDue: a reschedule that Kafka took 3 s before its
// task was due, read only after that time (queued behind a stall), moves
// the task when it came through Input with the watermarks published (the
// scanner's hold kept the task); through Slow, or with no watermarks, it
// is refused as read too late, and the task stays at its time.
func TestRescheduleReadAfterDue(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	due, to := now.Add(-5*time.Second), now.Add(time.Hour)
	for _, c := range []struct {
		name  string
		topic string
		marks Marks
		moves bool
	}{
		{"input with watermarks", "delay-input", &sink{}, true},
		{"slow", "delay-input-slow", &sink{}, false},
		{"no watermarks", "delay-input", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := &events{}
			st, ix, w := payload.NewMemory(), &fakeIndex{ev: ev}, &fakeWriter{ev: ev}
			in, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Registerer: prometheus.NewRegistry(),
				Marks: c.marks, Logger: slog.New(slog.DiscardHandler)}, st, ix, w)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			task := msg(0, 1, payload.HeaderTopic, "biz", payload.HeaderID, "r", payload.HeaderAt,
				strconv.FormatInt(due.UnixMilli(), 10))
			task.Time = due.Add(-time.Minute)
			resched := msg(1, 2, payload.HeaderOp, payload.OpReschedule, payload.HeaderID, "r", payload.HeaderAt,
				strconv.FormatInt(to.UnixMilli(), 10))
			resched.Topic, resched.Time = c.topic, due.Add(-3*time.Second)
			for _, m := range []payload.Message{task, resched} {
				if err := in.handle(t.Context(), []payload.Message{m}, time.Now()); err != nil {
					t.Fatalf("handle: %v", err)
				}
			}
			f := &lifecycleFixture{in: in, st: st, ix: ix, w: w}
			want := map[string][]int64{"r": {due.UnixMilli()}}
			if c.moves {
				want = map[string][]int64{"r": {to.UnixMilli()}}
			}
			if got := f.live(t); !equalLive(got, want) {
				t.Errorf("live %v, want %v", got, want)
			}
			reason, failed := f.failed(t)["r"]
			if failed == c.moves || !c.moves && !strings.Contains(reason, "delivered or being delivered") {
				t.Errorf("in the failed topic %v (%q), want %v", failed, reason, !c.moves)
			}
		})
	}
}

package scanner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// addIndex is memIndex with an Add that puts every entry in one zset and,
// like ZADD NX, adds an (id, exec_at) already there no second time.
type addIndex struct {
	*memIndex
	key string
}

func (a addIndex) Add(_ context.Context, _ time.Time, entries []zset.Entry) error {
	have := a.pending(a.key)
	for _, e := range entries {
		if !slices.Contains(have, e) {
			a.add(a.key, e)
			have = append(have, e)
		}
	}
	return nil
}

// trackingStore is a store with id rows (IDTracker): it records what
// Track was asked and answers cancelled for the names in cancelled.
type trackingStore struct {
	*payload.Memory
	mu        sync.Mutex
	tracked   []payload.Ref
	cancelled map[string]bool
}

func (s *trackingStore) Track(_ context.Context, tasks []payload.Task) ([]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]bool, len(tasks))
	for i, t := range tasks {
		s.tracked = append(s.tracked, t.Ref())
		out[i] = s.cancelled[t.Name]
	}
	return out, nil
}

// recurring decodes a recurring task named name, first due at first.
func recurring(t *testing.T, name string, first time.Time, kv ...string) payload.Task {
	t.Helper()
	hs := []kafka.Header{
		{Key: payload.HeaderTopic, Value: []byte("orders")},
		{Key: payload.HeaderID, Value: []byte(name)},
		{Key: payload.HeaderAt, Value: []byte(first.UTC().Format(time.RFC3339Nano))},
	}
	for i := 0; i < len(kv); i += 2 {
		hs = append(hs, kafka.Header{Key: kv[i], Value: []byte(kv[i+1])})
	}
	task, err := payload.Decode(kafka.Message{Value: []byte("v"), Headers: hs}, time.Now(), payload.DecodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func newRecurEnv(t *testing.T) *env {
	e := newEnv(t, Config{})
	e.s.ix = addIndex{memIndex: e.ix, key: "z"}
	return e
}

// scanAll runs one scan task over zset z up to now, as a dispatcher tick
// does.
func (e *env) scanAll() {
	e.scan(context.Background(), scantask.Task{Zset: "z", Until: time.Now().UnixMilli()})
}

func occurrences(msgs []kafka.Message) []string {
	var out []string
	for _, m := range msgs {
		v, _ := header(m, payload.HeaderOccurrence)
		out = append(out, v)
	}
	return out
}

// A delivered occurrence stores and indexes the next one (same id, next
// time, occurrence + 1) before its own entry goes; the series ends at
// delay-count.
func TestRecurringPlansNext(t *testing.T) {
	e := newRecurEnv(t)
	first := time.Now().Add(-10 * time.Second).Truncate(time.Millisecond)
	r := recurring(t, "r1", first, payload.HeaderEvery, "1s", payload.HeaderCount, "3")
	e.put("z", []payload.Task{r})

	for range 4 { // each tick delivers the occurrence due and plans the next (already due too)
		e.scanAll()
	}
	got := e.byTopic("orders")
	if occ := occurrences(got); !slices.Equal(occ, []string{"1", "2", "3"}) {
		t.Fatalf("delivered occurrences %v, want [1 2 3]", occ)
	}
	for i, m := range got {
		want := payload.FormatTime(first.Add(time.Duration(i) * time.Second).UnixMilli())
		if at, _ := header(m, payload.HeaderAt); at != want {
			t.Errorf("occurrence %d delay-at %s, want %s", i+1, at, want)
		}
		if id, _ := header(m, payload.HeaderID); id != "r1" {
			t.Errorf("occurrence %d delay-id %s", i+1, id)
		}
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("index after the series: %v, want empty", rest)
	}
	if p, d := value(e.s.recurM.planned), value(e.s.recurM.ended); p != 2 || d != 1 {
		t.Errorf("planned, ended = %v, %v; want 2, 1", p, d)
	}
}

// A crash after the next occurrence was planned and the current one
// produced, before its entry was removed, delivers the current one again
// (at least once) and plans the same next occurrence: one task, not two.
func TestRecurringReplayPlansOnce(t *testing.T) {
	e := newRecurEnv(t)
	first := time.Now().Add(-10 * time.Second).Truncate(time.Millisecond)
	r := recurring(t, "r1", first, payload.HeaderEvery, "1h")
	e.put("z", []payload.Task{r})

	e.scanAll()
	e.ix.add("z", zset.Entry{ID: r.ID, ExecAt: r.ExecAt}) // the ZREM that the crash lost
	e.scanAll()
	if occ := occurrences(e.byTopic("orders")); !slices.Equal(occ, []string{"1", "1"}) {
		t.Fatalf("delivered %v, want occurrence 1 twice (at least once)", occ)
	}
	next := first.Add(time.Hour).UnixMilli()
	if rest := e.ix.pending("z"); !slices.Equal(rest, []zset.Entry{{ID: r.ID, ExecAt: next}}) {
		t.Errorf("index %v, want the one next occurrence at %d", rest, next)
	}
	rows, _ := e.store.Get(context.Background(), []payload.Ref{{ID: r.ID, ExecAt: next}})
	if rows[0] == nil || rows[0].Cancel {
		t.Fatalf("next occurrence row %+v", rows[0])
	}
	if v := occurrences([]kafka.Message{payload.Deliverable(*rows[0])}); v[0] != "2" {
		t.Errorf("next occurrence's delay-occurrence %s, want 2", v[0])
	}
}

// A cancel by id and due time of the pending occurrence stops the series,
// whether it arrives before or after the scanner planned that occurrence.
func TestRecurringCancelStopsSeries(t *testing.T) {
	for _, early := range []bool{true, false} {
		name := "cancel after planning"
		if early {
			name = "cancel before planning"
		}
		t.Run(name, func(t *testing.T) {
			e := newRecurEnv(t)
			first := time.Now().Add(-10 * time.Second).Truncate(time.Millisecond)
			r := recurring(t, "r1", first, payload.HeaderEvery, "1s")
			e.put("z", []payload.Task{r})
			cancel := payload.Task{ID: r.ID, Name: r.Name, ExecAt: first.Add(time.Second).UnixMilli(), Cancel: true}
			if early {
				e.put("z", []payload.Task{cancel})
			}
			e.scanAll() // occurrence 1, plans 2
			if !early {
				e.put("z", []payload.Task{cancel})
			}
			e.scanAll() // occurrence 2: cancelled, nothing planned
			e.scanAll()
			if occ := occurrences(e.byTopic("orders")); !slices.Equal(occ, []string{"1"}) {
				t.Errorf("delivered %v, want only occurrence 1", occ)
			}
			if rest := e.ix.pending("z"); len(rest) != 0 {
				t.Errorf("index %v, want empty", rest)
			}
			if c := value(e.s.m.cancelled); c != 1 {
				t.Errorf("cancelled_total %v, want 1", c)
			}
		})
	}
}

// With id rows (IDTracker), each planned occurrence becomes its name's
// current due time, and a name cancelled by id gets its planned
// occurrence marked: the series stops. This is the scanner's half of
// cancel by id alone; the store's Track does the id-row write and read.
func TestRecurringTrackedCancelByID(t *testing.T) {
	e := newRecurEnv(t)
	ts := &trackingStore{Memory: e.store, cancelled: map[string]bool{}}
	e.s.store = ts
	first := time.Now().Add(-10 * time.Second).Truncate(time.Millisecond)
	r := recurring(t, "r1", first, payload.HeaderEvery, "1s")
	e.put("z", []payload.Task{r})

	e.scanAll() // occurrence 1, plans 2 and tracks it
	ts.mu.Lock()
	ts.cancelled["r1"] = true // cancel by id alone lands now
	ts.mu.Unlock()
	for range 3 {
		e.scanAll()
	}
	// Occurrence 2 was planned before the cancel: ingest's cancel by id
	// marks the tracked row itself. Without ingest here, it is delivered,
	// and the occurrence it plans is marked cancelled by Track's answer.
	if occ := occurrences(e.byTopic("orders")); !slices.Equal(occ, []string{"1", "2"}) {
		t.Errorf("delivered %v, want [1 2]", occ)
	}
	want := []payload.Ref{
		{ID: r.ID, ExecAt: first.Add(time.Second).UnixMilli()},
		{ID: r.ID, ExecAt: first.Add(2 * time.Second).UnixMilli()},
	}
	if !slices.Equal(ts.tracked, want) {
		t.Errorf("tracked %v, want %v", ts.tracked, want)
	}
	rows, _ := e.store.Get(context.Background(), want[1:])
	if rows[0] == nil || !rows[0].Cancel {
		t.Errorf("occurrence 3 row %+v, want the cancel marker", rows[0])
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("index %v, want empty", rest)
	}
}

// A stored recurrence the scanner cannot plan (a time zone this host does
// not know) delivers the occurrence and ends the series with an ERROR
// line; a store without Put ends it the same way.
func TestRecurringUnplannable(t *testing.T) {
	e := newRecurEnv(t)
	first := time.Now().Add(-10 * time.Second).Truncate(time.Millisecond)
	r := recurring(t, "r1", first, payload.HeaderCron, "* * * * *")
	r.Headers = append(r.Headers, kafka.Header{Key: payload.HeaderTZ, Value: []byte("Nowhere/Atlantis")})
	e.put("z", []payload.Task{r})
	e.scanAll()
	if occ := occurrences(e.byTopic("orders")); !slices.Equal(occ, []string{"1"}) {
		t.Errorf("delivered %v, want [1]", occ)
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("index %v, want empty", rest)
	}
	if !strings.Contains(e.logs.String(), `level=ERROR msg="recurring task ends: next occurrence not planned"`) {
		t.Errorf("no ERROR line:\n%s", e.logs.String())
	}
}

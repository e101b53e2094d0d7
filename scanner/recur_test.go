package scanner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// recurring decodes a recurring task named name, first due at first.
func recurring(t *testing.T, name string, first time.Time, kv ...string) payload.Task {
	t.Helper()
	hs := []payload.Header{
		{Key: payload.HeaderTopic, Value: []byte("orders")},
		{Key: payload.HeaderID, Value: []byte(name)},
		{Key: payload.HeaderAt, Value: []byte(first.UTC().Format(time.RFC3339Nano))},
	}
	for i := 0; i < len(kv); i += 2 {
		hs = append(hs, payload.Header{Key: kv[i], Value: []byte(kv[i+1])})
	}
	task, err := payload.Decode(payload.Message{Value: []byte("v"), Headers: hs}, time.Now(), payload.DecodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func newRecurEnv(t *testing.T) *env {
	return newEnv(t, Config{})
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
	if v := occurrences([]kafka.Message{record.FromMessage(payload.Deliverable(*rows[0]))}); v[0] != "2" {
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
			r := recurring(t, "r1", first, payload.HeaderEvery, "1s", payload.HeaderCount, "1000")
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

// With id rows (payload.IDStore: Memory has them), each planned occurrence
// becomes its name's current due time, and a name cancelled by id alone
// gets its planned occurrence marked: the series stops. Here the cancel's
// d:x lands while occurrence 2 is pending, but without ingest marking the
// row d:a names (as if the cancel read d:a before the scanner wrote it,
// or came after a crash had indexed occurrence 2 but not recorded it):
// the scanner reads the id row back before delivering, so occurrence 2
// does not go out, and the occurrence it plans is marked (a delivery
// after the cancel was found by taskstate's model test).
func TestRecurringCancelByIDStopsSeries(t *testing.T) {
	e := newRecurEnv(t)
	ctx := context.Background()
	first := time.Now().Add(-10 * time.Second).Truncate(time.Millisecond)
	r := recurring(t, "r1", first, payload.HeaderEvery, "1s", payload.HeaderCount, "1000")
	e.put("z", []payload.Task{r})

	e.scanAll() // occurrence 1, plans 2 and records it in the id row
	st, err := e.store.GetIDs(ctx, []uint64{r.ID})
	if err != nil {
		t.Fatal(err)
	}
	if want := first.Add(time.Second).UnixMilli(); st[0].Due() != want {
		t.Fatalf("id row's current due time %d, want occurrence 2's %d", st[0].Due(), want)
	}
	if err := e.store.PutIDs(ctx, []payload.IDWrite{{ID: r.ID, Name: r.Name, Cancel: true}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.scanAll()
	}
	if occ := occurrences(e.byTopic("orders")); !slices.Equal(occ, []string{"1"}) {
		t.Errorf("delivered %v, want [1]", occ)
	}
	third := payload.Ref{ID: r.ID, ExecAt: first.Add(2 * time.Second).UnixMilli()}
	rows, _ := e.store.Get(ctx, []payload.Ref{third})
	if rows[0] == nil || !rows[0].Cancel {
		t.Errorf("occurrence 3 row %+v, want the cancel marker", rows[0])
	}
	if rest := e.ix.pending("z"); len(rest) != 0 {
		t.Errorf("index %v, want empty", rest)
	}
	st, _ = e.store.GetIDs(ctx, []uint64{r.ID})
	if st[0].Due() != third.ExecAt || !st[0].Cancelled {
		t.Errorf("id row %+v, want due at occurrence 3 and cancelled", st[0])
	}
}

// A stored recurrence the scanner cannot plan (a time zone this host does
// not know) delivers the occurrence and ends the series with an ERROR
// line.
func TestRecurringUnplannable(t *testing.T) {
	e := newRecurEnv(t)
	first := time.Now().Add(-10 * time.Second).Truncate(time.Millisecond)
	r := recurring(t, "r1", first, payload.HeaderCron, "* * * * *")
	r.Headers = append(r.Headers, payload.Header{Key: payload.HeaderTZ, Value: []byte("Nowhere/Atlantis")})
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

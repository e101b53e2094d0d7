// Package payloadtest is the conformance suite every payload.Store passes:
// the in-memory store in unit tests, the HBase store against the real local
// HBase. A store that passes it can replace the other in ingest, scanner and
// the backfill CLI.
//
// The subtests run in parallel on one store backend; each works in its own
// window of exec_at times (one day wide, at a random offset per run), so
// they share a table without seeing each other's rows.
package payloadtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// Run runs the conformance suite. newStore is called once per subtest and
// must return a store on the same backend (for HBase: the same table); it
// should register its own cleanup.
func Run(t *testing.T, newStore func(t *testing.T) payload.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s payload.Store, w window)
	}{
		{"RoundTrip", testRoundTrip},
		{"Missing", testMissing},
		{"CancelBeforePut", testCancelBeforePut},
		{"CancelAfterPut", testCancelAfterPut},
		{"CancelOnly", testCancelOnly},
		{"CancelInOneBatch", testCancelInOneBatch},
		{"IdempotentPut", testIdempotentPut},
		{"ScanRange", testScanRange},
		{"ScanStops", testScanStops},
		{"ScanFrom", testScanFrom},
		{"PastDue", testPastDue},
		{"PastAndFarTasks", testPastAndFarTasks},
		{"LargeBatch", testLargeBatch},
		{"DenseGet", testDenseGet},
		{"IDRows", testIDRows},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t), newWindow())
		})
	}
}

// window is a day of exec_at times that no other subtest uses.
type window int64

const day = int64(24 * time.Hour / time.Millisecond)

// nextWindow starts at a random day some years from now and moves on a day
// per subtest, so parallel runs and earlier runs on a kept table never meet.
var nextWindow atomic.Int64

func init() {
	now := time.Now().UnixMilli()
	nextWindow.Store((now/day + 365 + rand.Int64N(1<<14)) * day)
}

func newWindow() window { return window(nextWindow.Add(day) - day) }

// at returns the time off milliseconds into the window.
func (w window) at(off int64) int64 { return int64(w) + off }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// task builds a full task whose fields all differ with n.
func task(w window, n int) payload.Task {
	name := fmt.Sprintf("task-%d-%d", int64(w), n)
	return payload.Task{
		ID:      payload.TaskID(name),
		Name:    name,
		Topic:   fmt.Sprintf("orders.v%d", n%3),
		ExecAt:  w.at(int64(n) * 1000),
		Key:     []byte(fmt.Sprintf("key-%d", n)),
		Value:   []byte(fmt.Sprintf("value-%d-%s", n, strings.Repeat("x", n%50))),
		Headers: []payload.Header{{Key: "trace", Value: []byte(fmt.Sprint(n))}},
	}
}

func cancelOf(t payload.Task) payload.Task {
	return payload.Task{ID: t.ID, Name: t.Name, ExecAt: t.ExecAt, Cancel: true}
}

func put(t *testing.T, s payload.Store, tasks ...payload.Task) {
	t.Helper()
	if err := s.Put(ctx(t), tasks); err != nil {
		t.Fatalf("Put(%d tasks): %v", len(tasks), err)
	}
}

func get(t *testing.T, s payload.Store, refs ...payload.Ref) []*payload.Task {
	t.Helper()
	got, err := s.Get(ctx(t), refs)
	if err != nil {
		t.Fatalf("Get(%d refs): %v", len(refs), err)
	}
	if len(got) != len(refs) {
		t.Fatalf("Get(%d refs) returned %d entries", len(refs), len(got))
	}
	return got
}

func get1(t *testing.T, s payload.Store, r payload.Ref) *payload.Task {
	t.Helper()
	return get(t, s, r)[0]
}

func scan(t *testing.T, s payload.Store, from, to int64) []payload.Task {
	t.Helper()
	var got []payload.Task
	if err := s.Scan(ctx(t), from, to, func(task payload.Task) error {
		got = append(got, task)
		return nil
	}); err != nil {
		t.Fatalf("Scan(%d, %d): %v", from, to, err)
	}
	return got
}

// same fails unless got is want, byte for byte (nil and empty differ).
func same(t *testing.T, what string, got *payload.Task, want payload.Task) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no row, want %+v", what, want)
		return
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, show(*got), show(want))
	}
}

func show(t payload.Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{ID:%d Name:%q Topic:%q ExecAt:%d Cancel:%v Key:%s Value:%s Headers:[",
		t.ID, t.Name, t.Topic, t.ExecAt, t.Cancel, showBytes(t.Key), showBytes(t.Value))
	for _, h := range t.Headers {
		fmt.Fprintf(&b, " %q=%s", h.Key, showBytes(h.Value))
	}
	b.WriteString(" ]}")
	return b.String()
}

func showBytes(v []byte) string {
	if v == nil {
		return "nil"
	}
	if len(v) > 40 {
		return fmt.Sprintf("%q...(%d bytes)", v[:40], len(v))
	}
	return fmt.Sprintf("%q", v)
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func testRoundTrip(t *testing.T, s payload.Store, w window) {
	long := strings.Repeat("n", payload.MaxNameLen)
	first := task(w, 1)
	first.ExecAt = w.at(1)
	cases := []payload.Task{
		first,
		{ // binary everything, nil and empty header values, repeated header keys
			Name: "binary", Topic: "t", ExecAt: w.at(2),
			Key:   allBytes(),
			Value: append(allBytes(), allBytes()...),
			Headers: []payload.Header{
				{Key: "nil", Value: nil},
				{Key: "empty", Value: []byte{}},
				{Key: "dup", Value: []byte("1")},
				{Key: "dup", Value: []byte("2")},
				{Key: "", Value: []byte("empty key")},
				{Key: "bin", Value: allBytes()},
				{Key: "ünïcode ☃", Value: []byte("✓")},
			},
		},
		{Name: "nil-key-and-value", Topic: "t", ExecAt: w.at(3)},
		{Name: "empty-key-and-value", Topic: "t", ExecAt: w.at(4), Key: []byte{}, Value: []byte{}},
		{Name: long, Topic: strings.Repeat("t", 249), ExecAt: w.at(5), Value: make([]byte, 100<<10)},
		{Name: "9223372036854775807", Topic: "snowflake", ExecAt: w.at(6), Value: []byte("max id")},
		{Name: "same-id-other-time", Topic: "t", ExecAt: w.at(7)},
	}
	// Same ID as the previous task at another time: a different row.
	cases = append(cases, payload.Task{Name: "same-id-other-time", Topic: "u", ExecAt: w.at(8), Value: []byte("2")})
	refs := make([]payload.Ref, 0, len(cases)+1)
	for i := range cases {
		cases[i].ID = payload.TaskID(cases[i].Name)
		refs = append(refs, cases[i].Ref())
	}
	put(t, s, cases...)

	// A missing ref in the middle keeps the alignment.
	missing := payload.Ref{ID: 42, ExecAt: w.at(9)}
	refs = append(refs[:2], append([]payload.Ref{missing}, refs[2:]...)...)
	got := get(t, s, refs...)
	if got[2] != nil {
		t.Errorf("Get(missing ref) = %s, want nil", show(*got[2]))
	}
	got = append(got[:2], got[3:]...)
	for i, want := range cases {
		same(t, fmt.Sprintf("Get(%q)", want.Name), got[i], want)
	}

	// Scan sees the same bytes.
	scanned := scan(t, s, w.at(0), w.at(day))
	if len(scanned) != len(cases) {
		t.Fatalf("Scan returned %d rows, want %d", len(scanned), len(cases))
	}
	for i, want := range cases { // cases are in ExecAt order
		same(t, fmt.Sprintf("Scan row %d", i), &scanned[i], want)
	}
}

func testMissing(t *testing.T, s payload.Store, w window) {
	if err := s.Put(ctx(t), []payload.Task{{Name: "neg", Topic: "t", ExecAt: -1}}); err == nil {
		t.Error("Put of a task with a negative exec_at succeeded")
	}
	got, err := s.Get(ctx(t), nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Get(nil) = %v, %v; want no entries, nil", got, err)
	}
	if err := s.Put(ctx(t), nil); err != nil {
		t.Errorf("Put(nil) = %v", err)
	}
	refs := []payload.Ref{{ID: 1, ExecAt: w.at(1)}, {ID: 2, ExecAt: w.at(2)}, {ID: 1, ExecAt: w.at(2)}}
	for i, g := range get(t, s, refs...) {
		if g != nil {
			t.Errorf("Get(%v) = %s, want nil", refs[i], show(*g))
		}
	}
	// A row at another exec_at is another row.
	tk := task(w, 3)
	put(t, s, tk)
	if g := get1(t, s, payload.Ref{ID: tk.ID, ExecAt: tk.ExecAt + 1}); g != nil {
		t.Errorf("Get(same id, exec_at+1) = %s, want nil", show(*g))
	}
	if got := scan(t, s, w.at(0), w.at(day)); len(got) != 1 {
		t.Errorf("Scan returned %d rows, want 1", len(got))
	}
}

func testCancelBeforePut(t *testing.T, s payload.Store, w window) {
	tk := task(w, 1)
	put(t, s, cancelOf(tk))
	put(t, s, tk) // a later task put must not clear the marker
	want := tk
	want.Cancel = true
	same(t, "Get after cancel, put", get1(t, s, tk.Ref()), want)
}

func testCancelAfterPut(t *testing.T, s payload.Store, w window) {
	tk := task(w, 1)
	put(t, s, tk)
	same(t, "Get after put", get1(t, s, tk.Ref()), tk)
	put(t, s, cancelOf(tk))
	want := tk
	want.Cancel = true
	same(t, "Get after put, cancel", get1(t, s, tk.Ref()), want)
	put(t, s, tk) // a re-put (ingest retry) does not revive it
	same(t, "Get after put, cancel, put", get1(t, s, tk.Ref()), want)
}

func testCancelOnly(t *testing.T, s payload.Store, w window) {
	tk := task(w, 1)
	put(t, s, cancelOf(tk))
	same(t, "Get of a cancel without task", get1(t, s, tk.Ref()), cancelOf(tk))
	// Cancelling one task leaves its neighbours alone.
	other := task(w, 2)
	put(t, s, other)
	same(t, "Get of the neighbour", get1(t, s, other.Ref()), other)
	got := scan(t, s, w.at(0), w.at(day))
	if len(got) != 2 || !got[0].Cancel || got[1].Cancel {
		t.Errorf("Scan = %v, want the cancel marker then the live task", got)
	}
}

func testCancelInOneBatch(t *testing.T, s payload.Store, w window) {
	a, b := task(w, 1), task(w, 2)
	put(t, s, a, cancelOf(a), cancelOf(b), b)
	for _, tk := range []payload.Task{a, b} {
		want := tk
		want.Cancel = true
		same(t, "Get "+tk.Name, get1(t, s, tk.Ref()), want)
	}
}

func testIdempotentPut(t *testing.T, s payload.Store, w window) {
	tk := task(w, 1)
	put(t, s, tk)
	put(t, s, tk)
	put(t, s, tk, tk)
	same(t, "Get after three puts", get1(t, s, tk.Ref()), tk)
	if got := scan(t, s, w.at(0), w.at(day)); len(got) != 1 {
		t.Errorf("Scan after three puts returned %d rows, want 1", len(got))
	}
	put(t, s, cancelOf(tk), cancelOf(tk))
	want := tk
	want.Cancel = true
	same(t, "Get after two cancels", get1(t, s, tk.Ref()), want)
}

func testScanRange(t *testing.T, s payload.Store, w window) {
	const from, to = 10_000, 20_000 // offsets in the window
	var tasks, want []payload.Task
	// Rows on and around both bounds, several ids per time so that they fall
	// into many salts.
	for _, off := range []int64{0, from - 1, from, from + 1, 15_000, to - 1, to, to + 1, day - 1} {
		for i := range 8 {
			name := fmt.Sprintf("scan-%d-%d", off, i)
			tk := payload.Task{ID: payload.TaskID(name), Name: name, Topic: "t", ExecAt: w.at(off), Value: []byte(name)}
			if i == 3 {
				tk.Cancel = true
				tk.Topic = ""
				tk.Value = nil
			}
			tasks = append(tasks, tk)
			if from <= off && off < to {
				want = append(want, tk)
			}
		}
	}
	put(t, s, tasks...)

	got := scan(t, s, w.at(from), w.at(to))
	if len(got) != len(want) {
		t.Fatalf("Scan [%d, %d) returned %d rows, want %d", from, to, len(got), len(want))
	}
	wantByName := make(map[string]payload.Task, len(want))
	for _, tk := range want {
		wantByName[tk.Name] = tk
	}
	for i, g := range got {
		if i > 0 {
			p := got[i-1]
			if p.ExecAt > g.ExecAt || p.ExecAt == g.ExecAt && p.ID >= g.ID {
				t.Errorf("Scan row %d (%d, %d) after (%d, %d): not in (ExecAt, ID) order",
					i, g.ExecAt, g.ID, p.ExecAt, p.ID)
			}
		}
		wt, ok := wantByName[g.Name]
		if !ok {
			t.Errorf("Scan returned %s, outside the range", show(g))
			continue
		}
		same(t, "Scan row "+g.Name, &g, wt)
	}

	for _, r := range []struct{ from, to int64 }{{to, from}, {from, from}} {
		if got := scan(t, s, w.at(r.from), w.at(r.to)); len(got) != 0 {
			t.Errorf("Scan [%d, %d) returned %d rows, want none", r.from, r.to, len(got))
		}
	}
	if got := scan(t, s, w.at(to), w.at(to+1)); len(got) != 8 {
		t.Errorf("Scan of one millisecond returned %d rows, want 8", len(got))
	}
}

func testScanStops(t *testing.T, s payload.Store, w window) {
	var tasks []payload.Task
	for i := range 20 {
		tasks = append(tasks, task(w, i))
	}
	put(t, s, tasks...)
	stop := errors.New("enough")
	n := 0
	err := s.Scan(ctx(t), w.at(0), w.at(day), func(payload.Task) error {
		n++
		if n == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 5 {
		t.Errorf("Scan with fn failing at row 5: err %v after %d rows; want %v after 5", err, n, stop)
	}

	c, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Scan(c, w.at(0), w.at(day), func(payload.Task) error { return nil }); err == nil {
		t.Error("Scan with a cancelled context succeeded")
	}
}

// testScanFrom: ScanFrom starts at a row, not a time: resumed after each
// row it returns every row once, in order (how a listing pages).
func testScanFrom(t *testing.T, s payload.Store, w window) {
	sf, ok := s.(interface {
		ScanFrom(ctx context.Context, from payload.Ref, to int64, fn func(payload.Task) error) error
	})
	if !ok {
		t.Fatalf("%T has no ScanFrom", s)
	}
	var tasks []payload.Task
	for i := range 40 { // 4 times, 10 ids each: rows of one time in many salts
		name := fmt.Sprintf("from-%d", i)
		tasks = append(tasks, payload.Task{ID: payload.TaskID(name), Name: name, Topic: "t", ExecAt: w.at(int64(i%4) * 1000)})
	}
	put(t, s, tasks...)
	all := scan(t, s, w.at(0), w.at(day))
	if len(all) != len(tasks) {
		t.Fatalf("Scan returned %d rows, want %d", len(all), len(tasks))
	}
	// Pages of 3: each resumes at the row after the last one returned.
	from := payload.Ref{ExecAt: w.at(0)}
	var paged []payload.Task
	for range len(tasks) {
		var page []payload.Task
		stop := errors.New("page full")
		err := sf.ScanFrom(ctx(t), from, w.at(day), func(tk payload.Task) error {
			page = append(page, tk)
			if len(page) == 3 {
				return stop
			}
			return nil
		})
		if err != nil && !errors.Is(err, stop) {
			t.Fatalf("ScanFrom(%v): %v", from, err)
		}
		paged = append(paged, page...)
		if len(page) < 3 {
			break
		}
		last := page[len(page)-1]
		from = payload.Ref{ExecAt: last.ExecAt, ID: last.ID + 1}
	}
	if len(paged) != len(all) {
		t.Fatalf("paging returned %d rows, want %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i].Ref() != all[i].Ref() {
			t.Fatalf("page row %d = %v, want %v", i, paged[i].Ref(), all[i].Ref())
		}
	}
	// The row from is included; the bound to is not.
	var got []payload.Task
	if err := sf.ScanFrom(ctx(t), all[5].Ref(), all[5].ExecAt+1, func(tk payload.Task) error {
		got = append(got, tk)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := 10 - 5%10; len(got) != want || len(got) > 0 && got[0].Ref() != all[5].Ref() {
		t.Errorf("ScanFrom(row 5, its time + 1ms) returned %d rows, want %d starting at %v", len(got), want, all[5].Ref())
	}
}

// testPastDue: a task's PastDue mark survives Get and Scan; a cancel of it
// stays a cancel.
func testPastDue(t *testing.T, s payload.Store, w window) {
	past, plain := task(w, 1), task(w, 2)
	past.PastDue = true
	put(t, s, past, plain)
	got := get(t, s, past.Ref(), plain.Ref())
	if got[0] == nil || !got[0].PastDue || got[1] == nil || got[1].PastDue {
		t.Fatalf("Get: PastDue of the marked and plain task = %v, %v; want true, false", got[0], got[1])
	}
	scanned := scan(t, s, past.ExecAt, past.ExecAt+1)
	if len(scanned) != 1 || !scanned[0].PastDue {
		t.Fatalf("Scan of the marked task = %v, want it with PastDue", scanned)
	}
	put(t, s, cancelOf(past))
	if c := get1(t, s, past.Ref()); c == nil || !c.Cancel {
		t.Errorf("cancel of a past-due task: %v, want cancelled", c)
	}
}

func testPastAndFarTasks(t *testing.T, s payload.Store, w window) {
	// Due long ago (beyond the retention window): still stored, delivered at
	// the next tick.
	past := task(w, 1)
	past.ExecAt = time.Now().Add(-30 * 24 * time.Hour).UnixMilli()
	// Due in 1,000 years: far past any sane limit, but a store must not
	// lose it (a cell TTL that large overflows unless capped).
	far := task(w, 2)
	far.ExecAt = time.Now().AddDate(1000, 0, 0).UnixMilli()
	farCancel := task(w, 3)
	farCancel.ExecAt = far.ExecAt
	put(t, s, past, far, cancelOf(farCancel))
	got := get(t, s, past.Ref(), far.Ref(), farCancel.Ref())
	same(t, "Get of a task due 30 days ago", got[0], past)
	same(t, "Get of a task due in 1,000 years", got[1], far)
	same(t, "Get of a cancel due in 1,000 years", got[2], cancelOf(farCancel))
	if rows := scan(t, s, 0, 1<<62); len(rows) < 3 {
		t.Errorf("Scan of all time returned %d rows, want at least 3", len(rows))
	}
}

func testLargeBatch(t *testing.T, s payload.Store, w window) {
	const n = 2000
	tasks := make([]payload.Task, n)
	refs := make([]payload.Ref, n)
	for i := range tasks {
		tasks[i] = task(w, i)
		tasks[i].ExecAt = w.at(int64(i % 97)) // many rows share a time
		if i%100 == 0 {
			tasks[i].Cancel = true
		}
		refs[i] = tasks[i].Ref()
	}
	put(t, s, tasks...)
	got := get(t, s, refs...)
	for i, g := range got {
		want := tasks[i]
		if want.Cancel {
			want = cancelOf(want)
		}
		same(t, fmt.Sprintf("Get row %d", i), g, want)
		if t.Failed() {
			return
		}
	}
	if rows := scan(t, s, w.at(0), w.at(day)); len(rows) != n {
		t.Errorf("Scan returned %d rows, want %d", len(rows), n)
	}
}

// testDenseGet asks, in one Get in shuffled order, for every other row of
// 4,000 due within two seconds (the rows in between are stored and not
// asked for), for some rows twice, and for rows that are not stored beside
// them: the rows a dense scan step reads, which the HBase store reads with
// filtered scans.
func testDenseGet(t *testing.T, s payload.Store, w window) {
	const n = 4000
	tasks := make([]payload.Task, n)
	for i := range tasks {
		tasks[i] = task(w, i)
		tasks[i].ExecAt = w.at(int64(i % 2000))
		if i%50 == 0 {
			tasks[i].Cancel = true
		}
	}
	put(t, s, tasks...)
	var (
		refs []payload.Ref
		want []*payload.Task
	)
	for i := 0; i < n; i += 2 {
		tk := tasks[i]
		if tk.Cancel {
			tk = cancelOf(tk)
		}
		refs = append(refs, tasks[i].Ref())
		want = append(want, &tk)
		if i%10 == 0 { // again
			refs = append(refs, tasks[i].Ref())
			want = append(want, &tk)
		}
		if i%7 == 0 { // not stored: the row before and after a stored one
			refs = append(refs, payload.Ref{ID: tasks[i].ID - 1, ExecAt: tasks[i].ExecAt}, payload.Ref{ID: tasks[i].ID + 1, ExecAt: tasks[i].ExecAt})
			want = append(want, nil, nil)
		}
	}
	rand.Shuffle(len(refs), func(i, j int) {
		refs[i], refs[j] = refs[j], refs[i]
		want[i], want[j] = want[j], want[i]
	})
	for i, g := range get(t, s, refs...) {
		switch {
		case want[i] == nil && g != nil:
			t.Errorf("Get(%v) = %s, want nil", refs[i], show(*g))
		case want[i] != nil && g == nil:
			t.Errorf("Get(%v) = nil, want %s", refs[i], show(*want[i]))
		case want[i] != nil:
			same(t, fmt.Sprintf("Get(%v)", refs[i]), g, *want[i])
		}
		if t.Failed() {
			return
		}
	}
}

package find_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

var now = time.UnixMilli(1_900_000_000_000)

func task(name, topic, key string, at int64) payload.Task {
	return payload.Task{ID: payload.TaskID(name), Name: name, Topic: topic, Key: []byte(key), ExecAt: at}
}

func store(t *testing.T, tasks ...payload.Task) *payload.Memory {
	t.Helper()
	m := payload.NewMemory()
	if err := m.Put(context.Background(), tasks); err != nil {
		t.Fatal(err)
	}
	return m
}

// all pages through q to the end and returns the names in order.
func all(t *testing.T, s find.Scanner, q find.Query) []string {
	t.Helper()
	var names []string
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatal("paging does not end")
		}
		p, err := find.List(context.Background(), s, q, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range p.Tasks {
			names = append(names, tk.Name)
		}
		if p.Next == "" {
			return names
		}
		q.Cursor = p.Next
	}
}

func TestPagingReturnsEachOnce(t *testing.T) {
	var tasks []payload.Task
	base := now.UnixMilli() + 1000
	for i := range 1000 { // 10 per millisecond: pages end inside a millisecond
		tasks = append(tasks, task(fmt.Sprintf("t-%d", i), "orders", "k", base+int64(i/10)))
	}
	s := store(t, tasks...)
	for _, limit := range []int{7, 100, find.MaxLimit} {
		names := all(t, s, find.Query{Limit: limit})
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Fatalf("limit %d: %s listed twice", limit, n)
			}
			seen[n] = true
		}
		if len(seen) != len(tasks) {
			t.Errorf("limit %d: %d tasks listed, want %d", limit, len(seen), len(tasks))
		}
	}
}

func TestFilters(t *testing.T) {
	ms := now.UnixMilli()
	past := task("past", "orders", "o-1", ms-1000)
	soon := task("soon", "orders", "o-2", ms+1000)
	other := task("other", "mail", "o-3", ms+2000)
	keyed := task("keyed", "orders", "x-1", ms+3000)
	gone := task("gone", "orders", "o-4", ms+4000)
	later := task("later", "orders", "o-5", ms+10_000)
	cancel := gone
	cancel.Cancel = true
	s := store(t, past, soon, other, keyed, gone, cancel, later)
	for _, c := range []struct {
		name string
		q    find.Query
		want []string
	}{
		{"pending by default", find.Query{}, []string{"soon", "other", "keyed", "later"}},
		{"pending starts at now", find.Query{From: 1}, []string{"soon", "other", "keyed", "later"}},
		{"topic", find.Query{Topic: "orders"}, []string{"soon", "keyed", "later"}},
		{"key prefix", find.Query{KeyPrefix: "o-"}, []string{"soon", "other", "later"}},
		{"range", find.Query{From: ms + 1500, To: ms + 10_000}, []string{"other", "keyed"}},
		{"cancelled", find.Query{State: payload.PhaseCancelled}, []string{"gone"}},
		{"done", find.Query{State: payload.PhaseDone}, []string{"past"}},
		{"any", find.Query{State: find.StateAny, Topic: "orders", KeyPrefix: "o-"}, []string{"past", "soon", "gone", "later"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := all(t, s, c.q); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("listed %v, want %v", got, c.want)
			}
		})
	}
	p, err := find.List(context.Background(), s, find.Query{State: find.StateAny, Topic: "orders", Limit: 2}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 2 || p.Tasks[0].State != payload.PhaseDone || p.Tasks[1].State != payload.PhasePending || p.Next == "" {
		t.Errorf("first page of 2 = %+v, next %q; want past (done), soon (pending) and a cursor", p.Tasks, p.Next)
	}
}

// A filter that matches nothing reads at most MaxExamined rows a page.
func TestExaminedBound(t *testing.T) {
	var tasks []payload.Task
	base := now.UnixMilli() + 1000
	for i := range find.MaxExamined + 10 {
		tasks = append(tasks, task(fmt.Sprintf("n-%d", i), "noise", "", base+int64(i)))
	}
	tasks = append(tasks, task("needle", "orders", "", base+find.MaxExamined+100))
	s := store(t, tasks...)
	p, err := find.List(context.Background(), s, find.Query{Topic: "orders"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 0 || p.Examined != find.MaxExamined || p.Next == "" {
		t.Fatalf("first page: %d tasks, %d examined, next %q; want none, %d, a cursor", len(p.Tasks), p.Examined, p.Next, find.MaxExamined)
	}
	p, err = find.List(context.Background(), s, find.Query{Topic: "orders", Cursor: p.Next}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 1 || p.Tasks[0].Name != "needle" || p.Next != "" {
		t.Errorf("second page: %+v next %q, want the needle and the end", p.Tasks, p.Next)
	}
}

func TestInvalid(t *testing.T) {
	for _, q := range []find.Query{
		{State: "late"},
		{From: 10, To: 5},
		{Limit: find.MaxLimit + 1},
		{Limit: -1},
		{Cursor: "nonsense!"},
		{Cursor: find.EncodeCursor(payload.Ref{ExecAt: 1})[:5]},
	} {
		if _, err := find.List(context.Background(), payload.NewMemory(), q, now); !errors.Is(err, find.ErrQuery) && !errors.Is(err, find.ErrCursor) {
			t.Errorf("List(%+v) = %v, want a query or cursor error", q, err)
		}
	}
	r := payload.Ref{ExecAt: 12345, ID: 678}
	if got, err := find.DecodeCursor(find.EncodeCursor(r)); err != nil || got != r {
		t.Errorf("cursor round trip: %v, %v; want %v", got, err, r)
	}
}

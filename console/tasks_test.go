package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
	"github.com/delayq/delayq/taskstate"
	"github.com/delayq/delayq/zset"
)

func TestTasksPage(t *testing.T) {
	now := time.Date(2030, 1, 2, 15, 0, 0, 0, time.UTC)
	f := newFixture(t, Config{Token: token, Now: func() time.Time { return now }}, true)
	var tasks []payload.Task
	for i := range 30 {
		name := fmt.Sprintf("s-%02d", i)
		topic := "orders"
		if i%3 == 0 {
			topic = "mail"
		}
		tasks = append(tasks, payload.Task{ID: payload.TaskID(name), Name: name, Topic: topic, Key: []byte("k-" + name),
			ExecAt: now.Add(time.Duration(i) * time.Minute).UnixMilli()})
	}
	if err := f.store.Put(context.Background(), tasks); err != nil {
		t.Fatal(err)
	}
	if status, _ := f.do(t, "GET", "/ui/api/tasks", "", ""); status != http.StatusUnauthorized {
		t.Fatalf("tasks without the token: %d, want 401", status)
	}
	var got []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		status, out := f.do(t, "GET", "/ui/api/tasks?topic=orders&from=2030-01-02T15:05:00Z&to=1893597600000&limit=4&cursor="+cursor, token, "")
		if status != 200 {
			t.Fatalf("page %d: %d %s", pages, status, out)
		}
		var v find.View
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		for _, it := range v.Tasks {
			got = append(got, it.ID)
		}
		if cursor = v.Next; cursor == "" {
			break
		}
	}
	// orders due in [15:05, 15:20): s-05 .. s-19 without multiples of 3.
	if want := "[s-05 s-07 s-08 s-10 s-11 s-13 s-14 s-16 s-17 s-19]"; fmt.Sprint(got) != want {
		t.Errorf("paged %v, want %s", got, want)
	}
	for _, q := range []string{"state=late", "limit=0", "from=soon", "cursor=zz"} {
		if status, out := f.do(t, "GET", "/ui/api/tasks?"+q, token, ""); status != http.StatusBadRequest {
			t.Errorf("?%s: %d %s, want 400", q, status, out)
		}
	}
}

// The task page needs only the id, and then says what the HTTP API's GET
// /v1/tasks/{id} says (payload.State) for every kind of id: the row it
// shows is the current one (a replace's VersionID row, a reschedule's new
// time), and a cancelled task is never "pending".
func TestTaskByIDAlone(t *testing.T) {
	now := time.Date(2030, 1, 2, 15, 0, 0, 0, time.UTC)
	f := newFixture(t, Config{Now: func() time.Time { return now }}, true)
	at := now.Add(4 * time.Minute).UnixMilli()
	ctx := context.Background()
	put := func(name string, id uint64, due int64, cancel bool) {
		t.Helper()
		tk := payload.Task{ID: id, Name: name, Topic: "orders", ExecAt: due, Value: []byte("v-" + name), Cancel: cancel}
		if cancel {
			tk.Topic, tk.Value = "", nil
		}
		if err := f.store.Put(ctx, []payload.Task{tk}); err != nil {
			t.Fatal(err)
		}
		if !cancel {
			f.ix.pending[zset.Entry{ID: id, ExecAt: due}] = true
		}
	}
	ids := func(w payload.IDWrite) {
		t.Helper()
		if err := f.store.PutIDs(ctx, []payload.IDWrite{w}); err != nil {
			t.Fatal(err)
		}
	}
	id := payload.TaskID
	// pending
	put("p", id("p"), at, false)
	ids(payload.IDWrite{ID: id("p"), Submitted: at})
	// rescheduled: the old row marked, the copy at the new time
	put("r", id("r"), at, false)
	put("r", id("r"), at+60_000, false)
	put("r", id("r"), at, true)
	ids(payload.IDWrite{ID: id("r"), Submitted: at, Moving: at + 60_000, At: at + 60_000})
	// replaced: the old row marked, the new one under its VersionID
	const rec = 1_893_596_000_000
	put("x", id("x"), at, false)
	put("x", taskstate.VersionID(id("x"), rec), at+120_000, false)
	put("x", id("x"), at, true)
	ids(payload.IDWrite{ID: id("x"), Submitted: at, Replacing: at + 120_000, ReplaceRecorded: rec, At: at + 120_000, Version: rec})
	// cancelled by id and due time, its entry still indexed (the cancel
	// overtook the task): cancelled, not pending
	put("c", id("c"), at, false)
	put("c", id("c"), at, true)
	f.ix.pending[zset.Entry{ID: id("c"), ExecAt: at}] = true
	ids(payload.IDWrite{ID: id("c"), Submitted: at})
	// cancelled by id alone, no task ever stored
	ids(payload.IDWrite{ID: id("k"), Cancel: true, CancelRecorded: rec})
	// delivered: due before now
	put("d", id("d"), now.Add(-time.Minute).UnixMilli(), false)
	ids(payload.IDWrite{ID: id("d"), Submitted: now.Add(-time.Minute).UnixMilli()})

	for _, tc := range []struct {
		name, state string
		pending     bool
		at          int64
		topic       string
	}{
		{"p", StatePending, true, at, "orders"},
		{"r", StatePending, true, at + 60_000, "orders"},
		{"x", StatePending, true, at + 120_000, "orders"},
		{"c", StateCancelled, false, at, "orders"},
		{"k", StateCancelled, false, 0, ""},
		{"d", StateDone, false, now.Add(-time.Minute).UnixMilli(), "orders"},
		{"never", StateUnknown, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, err := payload.State(ctx, f.store, tc.name, now)
			if err != nil {
				t.Fatal(err)
			}
			status, out := f.do(t, "GET", "/ui/api/task?id="+tc.name, "", "")
			var v TaskView
			if err := json.Unmarshal([]byte(out), &v); status != 200 || err != nil {
				t.Fatalf("%d %s %v", status, out, err)
			}
			if v.State != string(api.Phase) || v.State != tc.state {
				t.Errorf("console state %q, the API's %q, want %q", v.State, api.Phase, tc.state)
			}
			if v.Pending != tc.pending || (v.Pending && v.Cancelled) {
				t.Errorf("pending %v cancelled %v, want pending %v", v.Pending, v.Cancelled, tc.pending)
			}
			if v.ExecAt != tc.at || v.Topic != tc.topic {
				t.Errorf("row at %d of topic %q, want %d of %q", v.ExecAt, v.Topic, tc.at, tc.topic)
			}
		})
	}
}

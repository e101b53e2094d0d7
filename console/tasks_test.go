package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
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

// The task page needs only the id: its id row knows the current due time.
func TestTaskByIDAlone(t *testing.T) {
	f := newFixture(t, Config{}, true)
	at := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC).UnixMilli()
	tk := payload.Task{ID: payload.TaskID("moved"), Name: "moved", Topic: "orders", ExecAt: at, Value: []byte("v")}
	ctx := context.Background()
	if err := f.store.Put(ctx, []payload.Task{tk}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.PutIDs(ctx, []payload.IDWrite{{ID: tk.ID, Name: tk.Name, Submitted: at - 60_000, At: at}}); err != nil {
		t.Fatal(err)
	}
	status, out := f.do(t, "GET", "/ui/api/task?id=moved", "", "")
	if status != 200 || !strings.Contains(out, fmt.Sprintf(`"exec_at":%d`, at)) || !strings.Contains(out, `"topic":"orders"`) {
		t.Errorf("task by id alone: %d %s; want the row at its current due time", status, out)
	}
	if status, out := f.do(t, "GET", "/ui/api/task?id=never", "", ""); status != 404 || !strings.Contains(out, `no task with id \"never\"`) {
		t.Errorf("unknown id alone: %d %s, want 404", status, out)
	}
}

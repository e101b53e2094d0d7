package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/api"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

// memStates answers the API's reads from a memory store at testNow.
type memStates struct{ m *payload.Memory }

func (s memStates) State(ctx context.Context, id string) (payload.TaskState, error) {
	return payload.State(ctx, s.m, id, testNow)
}

func (s memStates) List(ctx context.Context, q find.Query) (find.Page, error) {
	return find.List(ctx, s.m, q, testNow)
}

// apiServer serves the HTTP API over a memory store holding tasks and the
// id-row writes ids (after the tasks' own), with token.
func apiServer(t *testing.T, token string, ids []payload.IDWrite, tasks ...payload.Task) string {
	t.Helper()
	m := payload.NewMemory()
	for _, tk := range tasks {
		ids = append(ids, payload.IDWrite{ID: tk.ID, Name: tk.Name, Submitted: tk.ExecAt})
	}
	if err := m.Put(t.Context(), tasks); err != nil {
		t.Fatal(err)
	}
	if err := m.PutIDs(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
	c, err := delayq.New(delayq.Config{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := api.New(api.Config{Token: token}, c, memStates{m})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// list and inspect through --api: what embedded mode answers, no HBase.
func TestListAndInspectThroughAPI(t *testing.T) {
	const token = "cli-api-token-0123456789"
	var tasks []payload.Task
	at := testNow.Add(time.Hour).UnixMilli()
	for i := range 250 {
		name := fmt.Sprintf("order-%03d", i)
		tasks = append(tasks, payload.Task{ID: payload.TaskID(name), Name: name, Topic: "orders", ExecAt: at + int64(i%7),
			Key: []byte(name), Value: []byte("hello"), Headers: []payload.Header{{Key: "trace", Value: []byte("t1")}}})
	}
	url := apiServer(t, token, nil, tasks...)
	env := map[string]string{"DELAYQ_API": url, "DELAYQ_API_TOKEN": token}

	out, errOut, code := run(t, env, "", "list", "--all", "--json", "--limit", "40")
	if code != 0 {
		t.Fatalf("list --all: exit %d: %s", code, errOut)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var it find.Item
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		seen[it.ID]++
	}
	if len(seen) != len(tasks) || !strings.Contains(errOut, "250 tasks") {
		t.Fatalf("list --all listed %d distinct tasks (%s), want %d", len(seen), errOut, len(tasks))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}

	out, errOut, code = run(t, env, "", "list", "--key", "order-01", "--limit", "5")
	if code != 0 || strings.Count(out, "\n") != 5 || !strings.Contains(errOut, "more: add --cursor ") {
		t.Fatalf("a page of 5 by key prefix: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(out, `key="order-01`) || !strings.Contains(out, `trace="t1"`) || !strings.Contains(out, "pending") {
		t.Errorf("list line misses key, header or state: %q", out)
	}

	out, errOut, code = run(t, env, "", "inspect", "--id", "order-042")
	if code != 0 {
		t.Fatalf("inspect --id through the API: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"state      pending", "topic      orders", `key        "order-042"`, "payload    5 bytes", `trace="t1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output misses %q:\n%s", want, out)
		}
	}
	if _, errOut, code = run(t, env, "", "inspect", "--id", "no-such"); code != 1 || !strings.Contains(errOut, `no task with id "no-such"`) {
		t.Errorf("inspect of an unknown id: exit %d, %q", code, errOut)
	}
	if _, errOut, code = run(t, map[string]string{"DELAYQ_API": url}, "", "list"); code != 1 || !strings.Contains(errOut, "DELAYQ_API_TOKEN") {
		t.Errorf("list without the token: exit %d, %q; want 1 naming DELAYQ_API_TOKEN", code, errOut)
	}
	if _, errOut, code = run(t, env, "", "list", "--state", "late"); code != 2 {
		t.Errorf("list --state late: exit %d, %q; want 2", code, errOut)
	}
}

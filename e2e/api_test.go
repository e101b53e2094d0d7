package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/topics"
)

// TestHTTPAPI drives delayd's HTTP API (--roles ...,api, a bearer token)
// with a plain net/http client on the real stack: a submitted task is
// delivered once at its time, a cancelled one never, a rescheduled one
// once at its new time, a recurring one (every 2 s, count 2) twice, GET follows each through its states, and every
// malformed request gets a 4xx with a reason and writes nothing.
func TestHTTPAPI(t *testing.T) {
	const token = "e2e-api-token-0123456789"
	t.Setenv("DELAYQ_API_TOKEN", token)
	e := newEnv(t)
	apiAddr := e2etest.FreePort(t)
	e.Start("api", "--roles", "ingest,dispatcher,scanner,api", "--api", apiAddr)
	topic := e.Topic("api")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	base := "http://" + apiAddr

	call := func(method, path, body, auth string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %q", method, path, res.StatusCode, raw)
		}
		return res.StatusCode, m
	}
	id := func(name string) string { return e.Run + "-" + name }

	// Submit three tasks; cancel one, reschedule another.
	start := time.Now()
	dueA := start.Add(4 * time.Second).UTC().Truncate(time.Millisecond)
	code, m := call("POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"id":%q,"at":%q,"key":"k-a","value":"hello","headers":{"trace":"t-a"}}`,
		topic, id("a"), dueA.Format(time.RFC3339Nano)), token)
	if code != 201 || m["id"] != id("a") || int64(m["at_ms"].(float64)) != dueA.UnixMilli() {
		t.Fatalf("POST a: %d %v", code, m)
	}
	if code, m = call("POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"id":%q,"after":"8s","value_base64":"AAE="}`, topic, id("b")), token); code != 201 {
		t.Fatalf("POST b: %d %v", code, m)
	}
	if code, m = call("POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"id":%q,"after":"5s"}`, topic, id("c")), token); code != 201 {
		t.Fatalf("POST c: %d %v", code, m)
	}
	if code, m = call("POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"id":%q,"after":"3s","every":"2s","count":2}`, topic, id("d")), token); code != 201 {
		t.Fatalf("POST d (recurring): %d %v", code, m)
	}
	if code, m = call("DELETE", "/v1/tasks/"+id("b"), "", token); code != 202 {
		t.Fatalf("DELETE b: %d %v", code, m)
	}
	code, m = call("PATCH", "/v1/tasks/"+id("c"), `{"after":"10s"}`, token)
	if code != 202 {
		t.Fatalf("PATCH c: %d %v", code, m)
	}
	dueC := int64(m["at_ms"].(float64))

	// Malformed requests: a reason each, nothing written.
	for _, bad := range []struct {
		method, path, body, auth string
		code                     int
		reason                   string
	}{
		{"POST", "/v1/tasks", `{"topic":`, token, 400, "invalid JSON"},
		{"POST", "/v1/tasks", `{"after":"1s"}`, token, 400, "topic"},
		{"POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"at":1,"after":"1s"}`, topic), token, 400, "not both"},
		{"POST", "/v1/tasks", `{"topic":"delay-scan","after":"1s"}`, token, 400, "internal"},
		{"POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"after":"1000h"}`, topic), token, 400, "max"},
		{"POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"value":"%s"}`, topic, strings.Repeat("x", 3<<20)), token, 413, "limit"},
		{"POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q}`, topic), "wrong-token-000000000000", 401, "token"},
		{"DELETE", "/v1/tasks/" + id("a"), "", "", 401, "token"},
		{"PATCH", "/v1/tasks/" + id("a"), `{}`, token, 400, "at"},
	} {
		code, m := call(bad.method, bad.path, bad.body, bad.auth)
		if reason, _ := m["error"].(string); code != bad.code || !strings.Contains(reason, bad.reason) {
			t.Errorf("%s %s %.40s: %d %v, want %d with %q", bad.method, bad.path, bad.body, code, m, bad.code, bad.reason)
		}
	}

	// States while pending.
	e2etest.WaitFor(t, 15*time.Second, "a pending", func() bool {
		_, m := call("GET", "/v1/tasks/"+id("a"), "", token)
		return m["state"] == "pending"
	})
	if code, m = call("GET", "/v1/tasks/"+id("nobody"), "", token); code != 404 {
		t.Errorf("GET unknown: %d %v, want 404", code, m)
	}

	// Deliveries: a at its time, c at its new time, b never.
	e2etest.WaitFor(t, 40*time.Second, "a, c and d twice delivered", func() bool { return out.Len() >= 4 })
	time.Sleep(time.Until(start.Add(12 * time.Second))) // past b's due time, with margin
	got := map[string][]e2etest.Received{}
	for _, r := range out.Snapshot() {
		got[e2etest.Header(r.Msg, "delay-id")] = append(got[e2etest.Header(r.Msg, "delay-id")], r)
	}
	if len(got[id("a")]) != 1 || len(got[id("c")]) != 1 || len(got[id("b")]) != 0 || len(got[id("d")]) != 2 || len(got) != 3 {
		t.Fatalf("deliveries by id: a %d, b %d (cancelled), c %d, d %d (every 2s, count 2); %d ids in all",
			len(got[id("a")]), len(got[id("b")]), len(got[id("c")]), len(got[id("d")]), len(got))
	}
	for i, r := range got[id("d")] {
		if occ := e2etest.Header(r.Msg, "delay-occurrence"); occ != fmt.Sprint(i+1) {
			t.Errorf("d delivery %d has delay-occurrence %q", i+1, occ)
		}
	}
	a := got[id("a")][0]
	if a.At.Before(dueA) || string(a.Msg.Value) != "hello" || string(a.Msg.Key) != "k-a" || e2etest.Header(a.Msg, "trace") != "t-a" {
		t.Errorf("a delivered at %v (due %v), key %q value %q trace %q", a.At, dueA, a.Msg.Key, a.Msg.Value, e2etest.Header(a.Msg, "trace"))
	}
	c := got[id("c")][0]
	cAt, _ := time.Parse(time.RFC3339Nano, e2etest.Header(c.Msg, "delay-at"))
	if c.At.Before(time.UnixMilli(dueC)) || cAt.UnixMilli() != dueC {
		t.Errorf("c delivered at %v with delay-at %s, want at or after its new time %d", c.At, e2etest.Header(c.Msg, "delay-at"), dueC)
	}
	if _, m = call("GET", "/v1/tasks/"+id("b"), "", token); m["state"] != "cancelled" {
		t.Errorf("GET b: %v, want cancelled", m)
	}
	if _, m = call("GET", "/v1/tasks/"+id("a"), "", token); m["state"] != "delivered-or-expired" {
		t.Errorf("GET a after delivery: %v, want delivered-or-expired", m)
	}
	for _, r := range failed.Snapshot() {
		if strings.HasPrefix(e2etest.Header(r.Msg, "delay-id"), e.Run) {
			t.Errorf("request of this test in delay-failed: %s", e2etest.Header(r.Msg, "delay-error"))
		}
	}
}

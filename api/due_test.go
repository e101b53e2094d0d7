package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/duetest"
)

// dueBody is the POST /v1/tasks body of a duetest case; a time of digits
// goes as a JSON number, as a program would send unix ms.
func dueBody(c duetest.Case) string {
	b := map[string]any{"topic": "orders", "value": "v"}
	switch c.Field {
	case duetest.FieldAt:
		if c.Value != "" && strings.Trim(c.Value, "0123456789") == "" {
			b["at"] = json.RawMessage(c.Value)
		} else {
			b["at"] = c.Value
		}
	case duetest.FieldAfter:
		b["after"] = c.Value
	case duetest.FieldEvery:
		b["after"], b["every"], b["count"] = "1m", c.Value, 3
	case duetest.FieldUntil:
		b["after"], b["every"], b["until"] = "1m", "1h", c.Value
	case duetest.FieldExpireAfter:
		b["after"], b["expire_after"] = "1m", c.Value
	}
	raw, err := json.Marshal(b)
	if err != nil {
		panic(err)
	}
	return string(raw)
}

// TestDueTable: the HTTP API's verdicts on the table every front door
// shares (payload/duetest), through POST /v1/tasks and, for each case,
// as the one task of a batch.
func TestDueTable(t *testing.T) {
	srv, f := newServer(t, Config{Decode: payload.DecodeConfig{MaxDelay: duetest.MaxDelay}}, nil)
	for _, c := range duetest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			body := dueBody(c)
			for _, path := range []string{"/v1/tasks", "/v1/tasks:batch"} {
				if path == "/v1/tasks:batch" {
					body = `{"tasks":[` + body + `]}`
				}
				sent := len(f.sent)
				code, out := do(t, srv, "POST", path, body)
				reason, _ := out["error"].(string)
				switch {
				case c.Reason == "" && code != http.StatusCreated:
					t.Errorf("%s %s: %d %q, want 201", path, body, code, reason)
				case c.Reason != "" && (code != http.StatusBadRequest || !strings.Contains(reason, c.Reason)):
					t.Errorf("%s %s: %d %q, want 400 saying %q", path, body, code, reason, c.Reason)
				case c.Reason != "" && len(f.sent) != sent:
					t.Errorf("%s %s: refused, but written", path, body)
				}
			}
		})
	}
}

// TestDueNamesTheField: the API's reasons name its own fields, and the
// unit of a time in seconds, in every request that takes a due time.
func TestDueNamesTheField(t *testing.T) {
	srv, f := newServer(t, Config{}, nil)
	const unit = `"at": 1795829478 looks like unix seconds; "at" is unix milliseconds (1795829478000)`
	for _, tc := range []struct {
		method, path, body, want string
	}{
		{"POST", "/v1/tasks", `{"topic":"orders","at":1795829478}`, unit},
		{"POST", "/v1/tasks", `{"topic":"orders","at":"1795829478"}`, unit},
		{"PUT", "/v1/tasks/r-1", `{"topic":"orders","at":1795829478}`, unit},
		{"PATCH", "/v1/tasks/r-1", `{"at":1795829478}`, unit},
		{"POST", "/v1/tasks:batch", `{"tasks":[{"topic":"orders","after":"1m"},{"topic":"orders","at":1795829478}]}`, "tasks[1]: " + unit},
		{"POST", "/v1/tasks", `{"topic":"orders","after":"1m","every":"1h","until":1795829478}`,
			`"until": 1795829478 looks like unix seconds; "until" is unix milliseconds (1795829478000)`},
		{"POST", "/v1/tasks", `{"topic":"orders"}`, `"at" or "after" is required ("after": "0s" is due now)`},
		{"POST", "/v1/tasks", `{"topic":"orders","at":null}`, `"at" or "after" is required`},
		{"PUT", "/v1/tasks/r-1", `{"topic":"orders"}`, `"at" or "after" is required`},
		{"POST", "/v1/tasks:batch", `{"tasks":[{"topic":"orders"}]}`, `tasks[0]: "at" or "after" is required`},
		{"PATCH", "/v1/tasks/r-1", `{"after":"2099h"}`, `"after": 2099h0m0s is over the maximum delay 720h0m0s`},
		{"PATCH", "/v1/tasks/r-1", `{"after":"-1m"}`, `"after": "-1m" is negative`},
		{"POST", "/v1/tasks", `{"topic":"orders","after":"1m","every":"0s"}`, `"every": "0s" is under the minimum 1s`},
		{"POST", "/v1/tasks", `{"topic":"orders","after":"1m","expire_after":"0s"}`, `"expire_after": "0s" is zero`},
	} {
		code, out := do(t, srv, tc.method, tc.path, tc.body)
		if reason, _ := out["error"].(string); code != http.StatusBadRequest || !strings.Contains(reason, tc.want) {
			t.Errorf("%s %s %s: %d %q, want 400 saying %q", tc.method, tc.path, tc.body, code, reason, tc.want)
		}
	}
	if len(f.sent) != 0 || len(f.reschedules) != 0 {
		t.Fatalf("refused requests written: %d sent, %d reschedules", len(f.sent), len(f.reschedules))
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/tasks", `{"topic":"orders","after":"0s"}`},
		{"POST", "/v1/tasks", `{"topic":"orders","after":"2d"}`},
		{"PATCH", "/v1/tasks/r-1", `{"after":"1d12h"}`},
		{"PATCH", "/v1/tasks/r-1", `{"at":"2020-01-01T00:00:00Z"}`},
	} {
		if code, out := do(t, srv, tc.method, tc.path, tc.body); code != http.StatusCreated && code != http.StatusAccepted {
			t.Errorf("%s %s %s: %d %v, want it taken", tc.method, tc.path, tc.body, code, out)
		}
	}
}

// TestListTimes: the list filters take delayctl's time syntax (the
// docs' own example uses from=now).
func TestListTimes(t *testing.T) {
	srv, _ := newServer(t, Config{}, fakeStates{})
	for _, q := range []string{"from=now", "from=-1h&to=%2B30m", "from=2030-01-02", "to=now&from=-2d", "from=1893553445000", "from=2030-01-02T15:04:05Z"} {
		if code, out := do(t, srv, "GET", "/v1/tasks?"+q, ""); code != http.StatusOK {
			t.Errorf("GET /v1/tasks?%s: %d %v, want 200", q, code, out)
		}
	}
	code, out := do(t, srv, "GET", "/v1/tasks?from=yesterday", "")
	if reason := fmt.Sprint(out["error"]); code != http.StatusBadRequest || !strings.Contains(reason, `from: "yesterday": not RFC 3339, a date, unix ms, now, or a relative time`) {
		t.Errorf("from=yesterday: %d %q", code, reason)
	}
}

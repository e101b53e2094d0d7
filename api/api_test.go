package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"gopkg.in/yaml.v3"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/internal/httpserve/httpservetest"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

// fakeClient builds messages with a real client and records the writes.
type fakeClient struct {
	*delayq.Client
	mu          sync.Mutex
	sent        []kafka.Message
	cancels     []string
	reschedules map[string]time.Time
	down        error // every write fails with it
	batches     int   // SendAll calls
}

func (f *fakeClient) Send(_ context.Context, m kafka.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return f.down
	}
	f.sent = append(f.sent, m)
	return nil
}

func (f *fakeClient) CancelByID(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return f.down
	}
	f.cancels = append(f.cancels, id)
	return nil
}

func (f *fakeClient) Reschedule(ctx context.Context, id string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return f.down
	}
	if f.reschedules == nil {
		f.reschedules = map[string]time.Time{}
	}
	f.reschedules[id] = at
	return nil
}

type fakeStates map[string]payload.TaskState

// List lists nothing: fakeStates keeps states, not rows.
func (s fakeStates) List(context.Context, find.Query) (find.Page, error) { return find.Page{}, nil }

func (s fakeStates) State(_ context.Context, id string) (payload.TaskState, error) {
	if id == "broken" {
		return payload.TaskState{}, errors.New("hbase down")
	}
	if st, ok := s[id]; ok {
		return st, nil
	}
	return payload.TaskState{Phase: payload.PhaseUnknown}, nil
}

func newServer(t *testing.T, cfg Config, states States) (*httptest.Server, *fakeClient) {
	t.Helper()
	c, err := delayq.New(delayq.Config{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f := &fakeClient{Client: c}
	cfg.Registerer = prometheus.NewRegistry()
	s, err := New(cfg, f, states)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, f
}

func do(t *testing.T, srv *httptest.Server, method, path, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %q", method, path, raw)
	}
	return res.StatusCode, out
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestSubmit(t *testing.T) {
	srv, f := newServer(t, Config{}, nil)
	at := time.Now().Add(time.Hour / 2).UTC().Truncate(time.Millisecond)
	code, out := do(t, srv, "POST", "/v1/tasks", `{"topic":"orders","id":"o-1","at":"`+at.Format(time.RFC3339Nano)+
		`","key":"k","value":"hello","headers":{"trace":"t1"},"every":"1h","count":3}`)
	if code != http.StatusCreated {
		t.Fatalf("code %d %v, want 201", code, out)
	}
	if out["id"] != "o-1" || int64(out["at_ms"].(float64)) != at.UnixMilli() || out["input"] != "delay-input" {
		t.Fatalf("answer %v", out)
	}
	if len(f.sent) != 1 {
		t.Fatalf("%d messages written, want 1", len(f.sent))
	}
	m := f.sent[0]
	for k, want := range map[string]string{"delay-topic": "orders", "delay-id": "o-1", "trace": "t1", "delay-every": "1h0m0s", "delay-count": "3"} {
		if got := header(m, k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if string(m.Key) != "k" || string(m.Value) != "hello" {
		t.Errorf("key %q value %q", m.Key, m.Value)
	}

	// after, base64 value, no id: a snowflake id; far ahead: the slow topic.
	code, out = do(t, srv, "POST", "/v1/tasks", `{"topic":"orders","after":"3h","value_base64":"AAEC"}`)
	if code != http.StatusCreated || out["id"] == "" || out["input"] != "delay-input-slow" {
		t.Fatalf("code %d %v", code, out)
	}
	if got := f.sent[1].Value; !bytes.Equal(got, []byte{0, 1, 2}) {
		t.Errorf("value %v, want 00 01 02", got)
	}
}

// Every malformed request gets 4xx with a reason and writes nothing.
func TestSubmitRefused(t *testing.T) {
	srv, f := newServer(t, Config{MaxBody: 4096, Decode: payload.DecodeConfig{MaxDelay: 24 * time.Hour}}, nil)
	cases := []struct {
		name, body string
		code       int
		reason     string
	}{
		{"bad JSON", `{"topic":`, 400, "invalid JSON"},
		{"unknown field", `{"topic":"orders","valeu":"x"}`, 400, "unknown field"},
		{"no topic", `{"after":"1s"}`, 400, `"topic" is required`},
		{"at and after", `{"topic":"orders","at":1,"after":"1s"}`, 400, "not both"},
		{"bad at", `{"topic":"orders","at":"tomorrow"}`, 400, "RFC 3339"},
		{"bad after", `{"topic":"orders","after":"soon"}`, 400, "duration"},
		{"value twice", `{"topic":"orders","value":"a","value_base64":"YQ=="}`, 400, "not both"},
		{"internal topic", `{"topic":"delay-failed","after":"1s"}`, 400, "delay-failed"},
		{"control header", `{"topic":"orders","after":"1s","headers":{"delay-at":"1"}}`, 400, "control header"},
		{"beyond max delay", `{"topic":"orders","after":"48h"}`, 400, "max"},
		{"bad every", `{"topic":"orders","every":"often"}`, 400, "every"},
		{"every and cron", `{"topic":"orders","after":"1s","every":"1h","cron":"0 9 * * *"}`, 400, "cron"},
		{"bad cron", `{"topic":"orders","after":"1s","cron":"61 * * * *"}`, 400, "cron"},
		{"too large", `{"topic":"orders","value":"` + strings.Repeat("x", 5000) + `"}`, 413, "limit"},
	}
	for _, tc := range cases {
		code, out := do(t, srv, "POST", "/v1/tasks", tc.body)
		reason, _ := out["error"].(string)
		if code != tc.code || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: %d %q, want %d with %q", tc.name, code, reason, tc.code, tc.reason)
		}
	}
	code, out := do(t, srv, "POST", "/v1/tasks", `{"topic":"orders"}`, "Content-Type", "text/plain")
	if code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d %v, want 415", code, out)
	}
	if len(f.sent) != 0 {
		t.Fatalf("%d refused requests were written", len(f.sent))
	}
}

func TestCancelRescheduleGet(t *testing.T) {
	due := time.Now().Add(time.Hour).UnixMilli()
	srv, f := newServer(t, Config{}, fakeStates{
		"p": {Phase: payload.PhasePending, At: due},
		"c": {Phase: payload.PhaseCancelled, At: due},
	})
	if code, out := do(t, srv, "DELETE", "/v1/tasks/a-1", ""); code != http.StatusAccepted || out["id"] != "a-1" ||
		!strings.Contains(fmt.Sprint(out["rule"]), "stays cancelled for --max-delay + --retention") {
		t.Fatalf("DELETE: %d %v", code, out)
	}
	if !slices.Equal(f.cancels, []string{"a-1"}) {
		t.Fatalf("cancels %v", f.cancels)
	}
	code, out := do(t, srv, "PATCH", "/v1/tasks/a-2", `{"after":"10m"}`)
	if code != http.StatusAccepted || f.reschedules["a-2"].IsZero() ||
		!strings.Contains(fmt.Sprint(out["rule"]), "moves no task submitted later") {
		t.Fatalf("PATCH: %d %v %v", code, out, f.reschedules)
	}
	if got := time.Until(f.reschedules["a-2"]); got < 9*time.Minute || got > 11*time.Minute {
		t.Errorf("rescheduled %v ahead, want about 10m", got)
	}
	for body, reason := range map[string]string{`{}`: `"at" or "after" is required`, `{"at":1,"after":"1s"}`: "not both", `{"at":"x"}`: "RFC 3339"} {
		if code, out := do(t, srv, "PATCH", "/v1/tasks/a-3", body); code != 400 || !strings.Contains(out["error"].(string), reason) {
			t.Errorf("PATCH %s: %d %v, want 400 %q", body, code, out, reason)
		}
	}
	if code, out := do(t, srv, "GET", "/v1/tasks/p", ""); code != 200 || out["state"] != "pending" || int64(out["at_ms"].(float64)) != due {
		t.Errorf("GET pending: %d %v", code, out)
	}
	if code, out := do(t, srv, "GET", "/v1/tasks/c", ""); code != 200 || out["state"] != "cancelled" {
		t.Errorf("GET cancelled: %d %v", code, out)
	}
	if code, out := do(t, srv, "GET", "/v1/tasks/nobody", ""); code != 404 {
		t.Errorf("GET unknown: %d %v, want 404", code, out)
	}
	if code, out := do(t, srv, "GET", "/v1/tasks/broken", ""); code != 503 {
		t.Errorf("GET with the store down: %d %v, want 503", code, out)
	}
	if code, out := do(t, srv, "POST", "/v1/tasks/p", `{}`); code != 405 && code != 404 {
		t.Errorf("POST to a task: %d %v, want 405", code, out)
	}
}

func TestReplace(t *testing.T) {
	srv, f := newServer(t, Config{}, fakeStates{})
	code, out := do(t, srv, "PUT", "/v1/tasks/r-1", `{"topic":"orders","after":"10m","value":"v2","headers":{"x":"y"}}`)
	if code != http.StatusAccepted || out["id"] != "r-1" || out["state"] != "replace requested" ||
		!strings.Contains(fmt.Sprint(out["rule"]), "acts as a submit") {
		t.Fatalf("PUT: %d %v", code, out)
	}
	if len(f.sent) != 1 {
		t.Fatalf("%d messages written, want 1", len(f.sent))
	}
	got, err := payload.Decode(record.ToMessage(f.sent[0]), time.Now(), payload.DecodeConfig{})
	if err != nil || got.Control != payload.ControlReplace || got.Name != "r-1" || string(got.Value) != "v2" || got.Topic != "orders" {
		t.Fatalf("written %+v, %v; want a replace of r-1 with value v2", got, err)
	}
	for body, reason := range map[string]string{
		`{"after":"1m"}`: `"topic" is required`,
		`{"topic":"o","id":"other","after":"1m"}`:           `is not the path's`,
		`{"topic":"o","after":"1m","every":"1h","count":2}`: "not with delay-op replace",
	} {
		if code, out := do(t, srv, "PUT", "/v1/tasks/r-2", body); code != 400 || !strings.Contains(out["error"].(string), reason) {
			t.Errorf("PUT %s: %d %v, want 400 %q", body, code, out, reason)
		}
	}
	if len(f.sent) != 1 {
		t.Errorf("%d messages written, want only the valid one", len(f.sent))
	}
}

// A dependency that fails answers 503 naming it, never its address (the
// log keeps the error).
func TestDependencyErrorsHideAddresses(t *testing.T) {
	var logs bytes.Buffer
	addrErr := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 9092}, Err: errors.New("connection refused")}
	srv, f := newServer(t, Config{WriteTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, failingStates{addrErr})
	f.down = addrErr
	for _, tc := range []struct{ method, path, body, want string }{
		{"POST", "/v1/tasks", `{"topic":"orders","after":"1m"}`, "kafka"},
		{"DELETE", "/v1/tasks/x", "", "kafka"},
		{"GET", "/v1/tasks/x", "", "payload store"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: %d Retry-After %q, want 503 with Retry-After", tc.method, tc.path, res.StatusCode, res.Header.Get("Retry-After"))
		}
		if body := string(raw); !strings.Contains(body, tc.want) || strings.Contains(body, "10.1.2.3") || strings.Contains(body, "9092") {
			t.Errorf("%s %s answered %s: want the dependency (%s) named, not its address", tc.method, tc.path, body, tc.want)
		}
	}
	if !strings.Contains(logs.String(), "10.1.2.3:9092") {
		t.Errorf("the log lost the error:\n%s", logs.String())
	}
}

type failingStates struct{ err error }

func (s failingStates) State(context.Context, string) (payload.TaskState, error) {
	return payload.TaskState{}, s.err
}

func (s failingStates) List(context.Context, find.Query) (find.Page, error) {
	return find.Page{}, s.err
}

// Bodies must say they are JSON: curl -d without a content type sends a
// form, a browser's cross-site request text/plain or nothing.
func TestContentTypeRequired(t *testing.T) {
	srv, f := newServer(t, Config{}, nil)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/jsonx"} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/tasks", strings.NewReader(`{"topic":"orders","after":"1m"}`))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q: %d, want 415", ct, res.StatusCode)
		}
	}
	if code, out := do(t, srv, "POST", "/v1/tasks", `{"topic":"orders","after":"1m"}`, "Content-Type", "application/json; charset=utf-8"); code != 201 {
		t.Errorf("application/json; charset=utf-8: %d %v", code, out)
	}
	if len(f.sent) != 1 {
		t.Errorf("sent %d, want only the JSON request", len(f.sent))
	}
}

// With LocalHosts a request for another host's name is refused (DNS
// rebinding), before anything is written.
func TestLocalHosts(t *testing.T) {
	srv, f := newServer(t, Config{Addr: "127.0.0.1:8080", LocalHosts: true}, nil)
	for host, want := range map[string]int{"attacker.example:8080": 421, "localhost:8080": 201, "127.0.0.1:8080": 201} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/tasks", strings.NewReader(`{"topic":"orders","after":"1m"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, res.StatusCode, want)
		}
	}
	if len(f.sent) != 2 {
		t.Errorf("sent %d, want the two local requests only", len(f.sent))
	}
}

// One client gets Burst requests at once and Rate a second; beyond, 429
// with Retry-After, before the token is even looked at.
func TestRateLimitPerClient(t *testing.T) {
	srv, _ := newServer(t, Config{Rate: 2, Burst: 3, Token: "0123456789abcdef-token"}, nil)
	var codes []int
	for range 5 {
		code, _ := do(t, srv, "DELETE", "/v1/tasks/x", "")
		codes = append(codes, code)
	}
	if want := []int{401, 401, 401, 429, 429}; !slices.Equal(codes, want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	res, err := http.Get(srv.URL + "/v1/tasks/x")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Errorf("%d Retry-After %q, want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	time.Sleep(600 * time.Millisecond) // 2 a second: one more token
	if code, _ := do(t, srv, "DELETE", "/v1/tasks/x", ""); code != 401 {
		t.Errorf("after a pause: %d, want 401 (let through to the token check)", code)
	}
}

// Every client has its own bucket, and the clients tracked stay bounded.
func TestClientsBounded(t *testing.T) {
	c := newClients(1, 1, 100)
	now := time.Unix(1_000_000, 0)
	if !c.allow("10.0.0.1:5000", now) || c.allow("10.0.0.1:5001", now) {
		t.Fatal("one client, two ports: want its second request refused")
	}
	if !c.allow("10.0.0.2:5000", now) {
		t.Fatal("another client shares the first one's bucket")
	}
	for i := range 1000 {
		c.allow(fmt.Sprintf("10.1.%d.%d:1", i/256, i%256), now.Add(time.Duration(i)*time.Millisecond))
		if n := c.len(); n > 100 {
			t.Fatalf("%d clients tracked, max 100", n)
		}
	}
}

// Run serves with Config.Serve's limits: a slow body is cut within the
// read timeout.
func TestRunCutsSlowBody(t *testing.T) {
	addr := freeAddr(t)
	c, err := delayq.New(delayq.Config{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := New(Config{Addr: addr, Serve: httpserve.Config{ReadTimeout: time.Second}}, &fakeClient{Client: c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			break
		} else if time.Since(start) > 10*time.Second {
			t.Fatal(err)
		}
	}
	if took, sent := httpservetest.SlowBody(t, addr, "/v1/tasks", 300*time.Millisecond); took > 2*time.Second || sent >= 8 {
		t.Errorf("slow body held the API %v (%d bytes sent), want it cut within the 1s read timeout", took, sent)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestToken(t *testing.T) {
	const token = "0123456789abcdef-token"
	srv, f := newServer(t, Config{Token: token}, nil)
	for _, auth := range []string{"", "Bearer wrong-token-0000000000", "Basic " + token} {
		if code, _ := do(t, srv, "POST", "/v1/tasks", `{"topic":"orders"}`, "Authorization", auth); code != 401 {
			t.Errorf("Authorization %q: %d, want 401", auth, code)
		}
	}
	if code, _ := do(t, srv, "DELETE", "/v1/tasks/x", "", "Authorization", "Bearer nope"); code != 401 {
		t.Errorf("DELETE with a wrong token: %d, want 401", code)
	}
	if code, out := do(t, srv, "POST", "/v1/tasks", `{"topic":"orders","after":"0s"}`, "Authorization", "Bearer "+token); code != 201 {
		t.Fatalf("right token: %d %v", code, out)
	}
	if len(f.sent) != 1 || len(f.cancels) != 0 {
		t.Fatalf("sent %d, cancels %v: only the authorized request may be written", len(f.sent), f.cancels)
	}
	res, err := http.Get(srv.URL + "/v1/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("openapi.yaml without a token: %d, want 200", res.StatusCode)
	}
	if _, err := New(Config{Token: "short"}, f, nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("a 5-byte token: %v, want ErrConfig", err)
	}
}

// The OpenAPI document lists exactly the routes the handler serves.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                          `yaml:"openapi"`
		Paths   map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q, want 3.x", doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(documented)
	served := []string{"DELETE /v1/tasks/{id}", "GET /v1/openapi.yaml", "GET /v1/tasks", "GET /v1/tasks/{id}", "PATCH /v1/tasks/{id}", "POST /v1/tasks", "POST /v1/tasks:batch", "PUT /v1/tasks/{id}"}
	served = append(served, topicRoutes...)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("documented %v, served %v", documented, served)
	}
	srv, _ := newServer(t, Config{}, fakeStates{})
	for _, route := range served {
		method, path, _ := strings.Cut(route, " ")
		path = strings.ReplaceAll(strings.ReplaceAll(path, "{id}", "some-id"), "{topic}", "orders")
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{}`))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(raw), "no route") || res.StatusCode == 405 {
			t.Errorf("%s: the handler does not serve it (%d %s)", route, res.StatusCode, raw)
		}
	}
}

// TestBlockedID: the docs' o-42 after DELETE: a submit or replace of an id
// that a cancel by id alone still blocks is refused with 409, naming the
// rule and the block's end; GET tells the block from a pending task.
func TestBlockedID(t *testing.T) {
	now := time.Now()
	cancelled, until := now.Add(-time.Minute).UnixMilli(), now.Add(time.Hour).UnixMilli()
	due := now.Add(-time.Minute + 5*time.Second).UnixMilli()
	srv, f := newServer(t, Config{}, fakeStates{
		"o-42":  {Phase: payload.PhaseCancelled, At: due, CancelledByID: cancelled, BlockedUntil: until},
		"bare":  {Phase: payload.PhaseCancelled, CancelledByID: cancelled, BlockedUntil: until},
		"over":  {Phase: payload.PhaseCancelled, At: due, CancelledByID: cancelled, BlockedUntil: now.Add(-time.Second).UnixMilli()},
		"by-at": {Phase: payload.PhaseCancelled, At: due},
	})
	end := time.UnixMilli(until).UTC().Format(time.RFC3339)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/tasks", `{"topic":"orders","id":"o-42","after":"5s"}`},
		{"PUT", "/v1/tasks/o-42", `{"topic":"orders","after":"5s"}`},
		{"POST", "/v1/tasks", `{"topic":"orders","id":"bare","after":"5s"}`},
	} {
		code, out := do(t, srv, tc.method, tc.path, tc.body)
		reason, _ := out["error"].(string)
		if code != http.StatusConflict || !strings.HasPrefix(reason, "id cancelled: ") || !strings.Contains(reason, "blocked until "+end) ||
			!strings.Contains(reason, "--max-delay + --retention") {
			t.Errorf("%s %s: %d %q, want 409 naming the rule and %s", tc.method, tc.path, code, reason, end)
		}
	}
	for _, id := range []string{"over", "by-at", "fresh", "broken"} { // block over, cancelled by due time, unknown, store down
		if code, out := do(t, srv, "POST", "/v1/tasks", `{"topic":"orders","id":"`+id+`","after":"5s"}`); code != http.StatusCreated {
			t.Errorf("POST %s: %d %v, want 201", id, code, out)
		}
	}
	if len(f.sent) != 4 {
		t.Errorf("%d messages written, want 4 (none for the refused)", len(f.sent))
	}
	code, out := do(t, srv, "GET", "/v1/tasks/o-42", "")
	if code != 200 || out["state"] != "cancelled" || out["blocked_until"] != end || int64(out["at_ms"].(float64)) != due ||
		out["cancelled_by_id_at"] != time.UnixMilli(cancelled).UTC().Format(time.RFC3339) ||
		!strings.Contains(fmt.Sprint(out["task"]), "the task the cancel cancelled") || !strings.Contains(fmt.Sprint(out["rule"]), "refused") {
		t.Errorf("GET o-42: %d %v", code, out)
	}
	code, out = do(t, srv, "GET", "/v1/tasks/bare", "")
	if _, has := out["at"]; code != 200 || has || out["blocked_until"] != end || !strings.HasPrefix(fmt.Sprint(out["task"]), "none") {
		t.Errorf("GET of a blocked id with no task: %d %v, want no at and task none", code, out)
	}
	code, out = do(t, srv, "GET", "/v1/tasks/by-at", "")
	if _, has := out["blocked_until"]; code != 200 || has || out["state"] != "cancelled" {
		t.Errorf("GET of a task cancelled by due time: %d %v, want no block", code, out)
	}
}

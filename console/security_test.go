package console

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// With a token every API call needs it, reads included: they show task
// payloads and delay-failed. The pages themselves hold no data.
func TestReadsNeedToken(t *testing.T) {
	f := newFixture(t, Config{Token: token}, true)
	reads := []string{"/ui/api/overview", "/ui/api/backlog", "/ui/api/task?id=a&at=1", "/ui/api/failed", "/ui/api/nothing"}
	for _, p := range reads {
		for _, auth := range []string{"", token + "x"} {
			if status, out := f.do(t, "GET", p, auth, ""); status != http.StatusUnauthorized || !strings.Contains(out, "console token") {
				t.Errorf("GET %s with token %q: %d %s, want 401", p, auth, status, out)
			}
		}
	}
	for _, p := range reads[:4] {
		if status, out := f.do(t, "GET", p, token, ""); status != http.StatusOK {
			t.Errorf("GET %s with the token: %d %s, want 200", p, status, out)
		}
	}
	if status, _ := f.do(t, "GET", "/ui/", "", ""); status != http.StatusOK {
		t.Errorf("GET /ui/ without the token: %d, want 200 (the page asks for the token)", status)
	}
}

// A Host the console does not answer to is refused, pages and API alike.
func TestHostRefused(t *testing.T) {
	f := newFixture(t, Config{Hosts: []string{"delayq.example.com"}}, true)
	for _, p := range []string{"/ui/", "/ui/api/failed"} {
		for host, want := range map[string]int{"attacker.example": http.StatusMisdirectedRequest, "delayq.example.com:443": 200, "": 200} {
			req, _ := http.NewRequest("GET", f.srv.URL+p, nil)
			if host != "" {
				req.Host = host
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != want {
				t.Errorf("GET %s Host %q: %d, want %d", p, host, res.StatusCode, want)
			}
		}
	}
}

type failingStore struct{ err error }

func (s failingStore) Get(context.Context, []payload.Ref) ([]*payload.Task, error) { return nil, s.err }
func (s failingStore) GetIDs(context.Context, []uint64) ([]payload.IDState, error) { return nil, s.err }
func (s failingStore) ScanFrom(context.Context, payload.Ref, int64, func(payload.Task) error) error {
	return s.err
}

type failingIndex struct{ err error }

func (i failingIndex) Backlog(context.Context) ([]zset.SegmentCount, error) { return nil, i.err }
func (i failingIndex) Pending(context.Context, zset.Entry) (bool, error)    { return false, i.err }
func (i failingIndex) Key(zset.Entry) string                                { return "" }

type failingTopic struct{ err error }

func (f failingTopic) Browse(context.Context, FailedQuery) ([]FailedMessage, error) {
	return nil, f.err
}
func (f failingTopic) Replay(context.Context, []FailedRef) (int, error) { return 0, f.err }

type failingCanceller struct{ err error }

func (c failingCanceller) Cancel(context.Context, string, int64) error { return c.err }

// A backend that fails answers 502 naming it, never its address; the log
// keeps the error.
func TestBackendErrorsHideAddresses(t *testing.T) {
	var logs bytes.Buffer
	addrErr := func(port int) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: port}, Err: errors.New("connection refused")}
	}
	c, err := New(Config{Gatherer: prometheus.NewRegistry(), Write: true, Token: token, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.Attach(Backends{Index: failingIndex{addrErr(6379)}, Store: failingStore{addrErr(16020)},
		Failed: failingTopic{addrErr(9092)}, Canceller: failingCanceller{addrErr(9092)}})
	f := &fixture{srv: httptest.NewServer(c.Handler())}
	defer f.srv.Close()
	for _, tc := range []struct{ method, path, body, dep string }{
		{"GET", "/ui/api/backlog", "", "redis"},
		{"GET", "/ui/api/task?id=a&at=1", "", "payload store"},
		{"GET", "/ui/api/failed", "", "kafka"},
		{"POST", "/ui/api/task/cancel", `{"id":"a","at":"1"}`, "payload store"}, // is it a replace?
		{"POST", "/ui/api/failed/replay", `{"messages":[{"partition":0,"offset":1}]}`, "kafka"},
	} {
		status, out := f.do(t, tc.method, tc.path, token, tc.body)
		if status != http.StatusBadGateway || !strings.Contains(out, tc.dep) || strings.Contains(out, "10.1.2.3") {
			t.Errorf("%s %s: %d %s, want 502 naming %s without its address", tc.method, tc.path, status, out, tc.dep)
		}
	}
	// The store answers, Kafka does not: the cancel names kafka.
	c2, err := New(Config{Gatherer: prometheus.NewRegistry(), Write: true, Token: token, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c2.Attach(Backends{Index: failingIndex{addrErr(6379)}, Store: payload.NewMemory(), Canceller: failingCanceller{addrErr(9093)}})
	f2 := &fixture{srv: httptest.NewServer(c2.Handler())}
	defer f2.srv.Close()
	if status, out := f2.do(t, "POST", "/ui/api/task/cancel", token, `{"id":"a","at":"1"}`); status != http.StatusBadGateway ||
		!strings.Contains(out, "kafka") || strings.Contains(out, "10.1.2.3") {
		t.Errorf("cancel with Kafka down: %d %s, want 502 naming kafka without its address", status, out)
	}
	for _, a := range []string{"10.1.2.3:6379", "10.1.2.3:16020", "10.1.2.3:9092", "10.1.2.3:9093"} {
		if !strings.Contains(logs.String(), a) {
			t.Errorf("the log lost the error with %s:\n%s", a, logs.String())
		}
	}
}

// Reads that return payloads are logged: who (remote address, token) and
// what (task id, delay-failed offsets).
func TestPayloadReadsLogged(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, Config{Token: token, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, true)
	at := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC).UnixMilli()
	if err := f.store.Put(context.Background(), []payload.Task{{ID: payload.TaskID("t-9"), Name: "t-9", ExecAt: at, Topic: "orders", Value: []byte(`{"password":"hunter2"}`)}}); err != nil {
		t.Fatal(err)
	}
	f.failed.msgs = []FailedMessage{{FailedRef: FailedRef{Partition: 2, Offset: 7}, Reason: "bad", Value: []byte("x")}}
	if status, _ := f.do(t, "GET", "/ui/api/task?id=t-9&at=2030-01-02T15:04:05Z", token, ""); status != 200 {
		t.Fatalf("task: %d", status)
	}
	if status, _ := f.do(t, "GET", "/ui/api/failed", token, ""); status != 200 {
		t.Fatalf("failed: %d", status)
	}
	out := logs.String()
	for _, want := range []string{`"msg":"console task read"`, `"id":"t-9"`, `"msg":"console failed messages read"`, `"offsets":["2/7"]`, `"auth":"token"`, `"remote":"127.0.0.1:`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hunter2") || strings.Contains(out, token) {
		t.Errorf("the log holds a payload or the token:\n%s", out)
	}
}

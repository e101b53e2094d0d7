package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/internal/httpserve/httpservetest"
)

const consoleToken = "0123456789abcdef-console"

// The console shows payloads: on an --http address other than loopback it
// needs the token, and without one it is off, with one WARN line saying
// how to turn it on; on loopback it stays open unless a token is set.
func TestConsoleNeedsTokenOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		name, http, token string
		noAuth, withAuth  int
	}{
		{"loopback, no token: open", "127.0.0.1:9464", "", 200, 200},
		{"all interfaces, no token: off", "0.0.0.0:9464", "", 404, 404},
		{"any name, no token: off", "delayd.example:9464", "", 404, 404},
		{"all interfaces with token", ":9464", consoleToken, 401, 200},
		{"loopback with token", "127.0.0.1:9464", consoleToken, 401, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			d, err := New(Config{HTTP: tc.http, Console: true, ConsoleToken: tc.token},
				Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"/ui/api/overview", "/ui/api/failed", "/ui/api/task?id=a&at=1"} {
				for auth, want := range map[string]int{"": tc.noAuth, "Bearer " + consoleToken: tc.withAuth} {
					req := httptest.NewRequest(http.MethodGet, path, nil)
					req.Host = "10.0.0.7:9464" // the pod's IP, as a browser through port-forward or a probe sends it
					req.Header.Set("Authorization", auth)
					rec := httptest.NewRecorder()
					d.handler().ServeHTTP(rec, req)
					// Without backends the reads that need them answer 503:
					// past the token check all the same.
					if got := rec.Code; got != want && !(want == 200 && got == http.StatusServiceUnavailable) {
						t.Errorf("GET %s with %q: %d %s, want %d", path, auth, got, rec.Body, want)
					}
				}
			}
			warns := strings.Count(logs.String(), "console off")
			if off := tc.noAuth == 404; off != (warns == 1) || warns > 1 {
				t.Errorf("%d 'console off' lines, want one when it is off:\n%s", warns, logs.String())
			}
			if tc.noAuth == 404 && !strings.Contains(logs.String(), "DELAYQ_CONSOLE_TOKEN") {
				t.Errorf("the WARN line does not say how to turn the console on:\n%s", logs.String())
			}
		})
	}
}

// The console answers only the Host names it knows (DNS rebinding): IP
// literals, localhost, the name delayd listens on and --console-hosts.
func TestConsoleHostCheck(t *testing.T) {
	d, err := New(Config{HTTP: "delayd.internal:9464", Console: true, ConsoleToken: consoleToken, ConsoleHosts: []string{"delayq.example.com"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{
		"127.0.0.1:9464": 200, "localhost:9464": 200, "10.0.0.7:9464": 200, "delayd.internal:9464": 200,
		"delayq.example.com": 200, "attacker.example:9464": http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest(http.MethodGet, "/ui/api/overview", nil)
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+consoleToken)
		rec := httptest.NewRecorder()
		d.handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}

// pprof never serves cmdline: it would show secrets given as flags.
func TestPprofHasNoCmdline(t *testing.T) {
	d, err := New(Config{Pprof: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/debug/pprof/cmdline": 404, "/debug/pprof/": 200, "/debug/pprof/heap": 200} {
		rec := httptest.NewRecorder()
		d.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
	}
}

// pprof beyond loopback needs the console token, and without one it is
// off with a WARN line; on loopback it stays open.
func TestPprofNeedsTokenOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		name, http, token string
		noAuth, withAuth  int
	}{
		{"loopback, no token: open", "127.0.0.1:9464", "", 200, 200},
		{"all interfaces, no token: off", "0.0.0.0:9464", "", 404, 404},
		{"all interfaces with token", ":9464", consoleToken, 401, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			d, err := New(Config{HTTP: tc.http, Pprof: true, ConsoleToken: tc.token},
				Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			h := d.handler()
			for auth, want := range map[string]int{"": tc.noAuth, "Bearer " + consoleToken: tc.withAuth} {
				req := httptest.NewRequest(http.MethodGet, "/debug/pprof/heap", nil)
				req.Header.Set("Authorization", auth)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					t.Errorf("GET /debug/pprof/heap with %q: %d, want %d", auth, rec.Code, want)
				}
			}
			if off := tc.noAuth == 404; off != strings.Contains(logs.String(), "pprof off") {
				t.Errorf("off %v, but the log says:\n%s", off, logs.String())
			}
		})
	}
}

// Run serves --http with Config.Serve's limits, on a real listener: a
// slow body is cut within the read timeout, an idle keep-alive is closed.
func TestRunServesWithLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	// No backends answer: the roles wait for them, HTTP serves meanwhile.
	d, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Redis: "127.0.0.1:1", HBaseZK: "127.0.0.1:1",
		Serve: httpserve.Config{ReadTimeout: time.Second, IdleTimeout: 500 * time.Millisecond}}, Options{Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return 30s after its context ended")
		}
	}()
	if took, sent := httpservetest.SlowBody(t, addr, "/healthz", 300*time.Millisecond); took > 2*time.Second || sent >= 8 {
		t.Errorf("slow body held --http %v (%d bytes sent), want it cut within the 1s read timeout", took, sent)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	start := time.Now()
	c.SetReadDeadline(start.Add(10 * time.Second))
	io.Copy(io.Discard, c) // the answer, then EOF when the server closes
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("idle keep-alive closed after %v, want about 500ms", took)
	}
}

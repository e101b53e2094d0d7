package httpserve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/httpserve/httpservetest"
)

// serve runs h with cfg on a real listener of 127.0.0.1 until the test
// ends; it returns the address and checks that Run returned.
func serve(t *testing.T, cfg Config, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(ln, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return 10s after its context ended")
		}
	})
	return s.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends one keep-alive GET on c and reads its answer, failing after
// wait without one.
func get(c net.Conn, br *bufio.Reader, wait time.Duration) (*http.Response, error) {
	if _, err := fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(wait))
	defer c.SetReadDeadline(time.Time{})
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res, err
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })

// awaitClose reads c until the server closes it and returns when that was.
func awaitClose(t *testing.T, c net.Conn, br *bufio.Reader, within time.Duration) time.Time {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", within)
	}
	return time.Now()
}

// A body sent a byte at a time is cut when ReadTimeout ends, not when
// the client is done: 8 bytes of a 100-byte body, one every 300 ms, would
// take 2.4 s and never finish.
func TestSlowBodyCut(t *testing.T) {
	const readTimeout = time.Second
	readErr := make(chan error, 1)
	addr := serve(t, Config{ReadTimeout: readTimeout}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}))
	took, sent := httpservetest.SlowBody(t, addr, "/", 300*time.Millisecond)
	if took > readTimeout+time.Second || sent >= 8 {
		t.Errorf("connection closed %v after the request began, %d slow bytes sent; want within the %v read timeout (+1s)", took, sent, readTimeout)
	}
	if err := <-readErr; err == nil {
		t.Error("the handler read the whole body, want a timeout")
	}
}

// A keep-alive connection with no next request is closed after
// IdleTimeout.
func TestIdleClosed(t *testing.T) {
	const idle = 500 * time.Millisecond
	addr := serve(t, Config{IdleTimeout: idle}, ok)
	c := dial(t, addr)
	br := bufio.NewReader(c)
	if _, err := get(c, br, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	if took := awaitClose(t, c, br, 5*time.Second).Sub(answered); took < idle/2 || took > idle+time.Second {
		t.Errorf("idle connection closed %v after its answer, want about %v", took, idle)
	}
}

// MaxConns connections are served at once; the next waits, unanswered,
// until one of them closes. The default cap is DefaultMaxConns, tested with
// as many real connections.
func TestConnectionCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		cap  int
	}{
		{"configured", Config{MaxConns: 3}, 3},
		{"default", Config{}, DefaultMaxConns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, tc.cfg, ok)
			conns := make([]net.Conn, tc.cap)
			for i := range conns {
				conns[i] = dial(t, addr)
				if _, err := get(conns[i], bufio.NewReader(conns[i]), 10*time.Second); err != nil {
					t.Fatalf("connection %d: %v", i+1, err)
				}
			}
			extra := dial(t, addr)
			br := bufio.NewReader(extra)
			_, err := get(extra, br, 500*time.Millisecond)
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("connection %d: %v, want no answer while %d are open", tc.cap+1, err, tc.cap)
			}
			conns[0].Close()
			extra.SetReadDeadline(time.Now().Add(5 * time.Second))
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("connection %d after one closed: %v, want its answer", tc.cap+1, err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("connection %d: %s", tc.cap+1, res.Status)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	var c Config
	c.setDefaults()
	want := Config{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second,
		IdleTimeout: 60 * time.Second, MaxConns: 1000, ShutdownGrace: 5 * time.Second}
	if c != want {
		t.Errorf("defaults %+v, want %+v", c, want)
	}
	bad := Config{ReadTimeout: -1, MaxConns: -1}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "read timeout") || !strings.Contains(err.Error(), "max conns") {
		t.Errorf("Validate(%+v) = %v, want both problems", bad, err)
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9464": true, "127.0.0.2:1": true, "[::1]:8080": true, "localhost:8080": true, "LOCALHOST:1": true,
		"0.0.0.0:9464": false, ":9464": false, "[::]:8080": false, "10.0.0.1:80": false, "delayd.example:80": false,
		"127.0.0.1": false, // no port: not an address delayd listens on
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestHostAllowed(t *testing.T) {
	names := []string{"delayq.example.com", "delayd.ops.svc"}
	for host, want := range map[string]bool{
		"127.0.0.1:9464": true, "localhost:9464": true, "[::1]:9464": true, "10.2.3.4:9464": true, "10.2.3.4": true,
		"Delayq.Example.com": true, "delayq.example.com.:443": true, "delayd.ops.svc:9464": true,
		"attacker.example:9464": false, "attacker.example": false, "localhost.attacker.example": false,
		"127.0.0.1.nip.io:9464": false, "": false,
	} {
		if got := HostAllowed(host, names); got != want {
			t.Errorf("HostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

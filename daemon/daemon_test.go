package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delayq/delayq/internal/httpserve"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // every one must appear in the error; none: valid
	}{
		{name: "defaults"},
		{name: "one role", cfg: Config{Roles: []string{RoleScanner}}},
		{name: "unknown role", cfg: Config{Roles: []string{"ingest", "janitor"}}, want: []string{`roles: unknown role "janitor"`}},
		// The rules below are the role packages' own (their Validate),
		// named by the flag: delayd refuses at once what a role would
		// refuse only once setup is done.
		{name: "tick below 1s", cfg: Config{Tick: 500 * time.Millisecond}, want: []string{"tick: dispatcher: invalid config: tick 500ms: want whole seconds, at least 1s"}},
		{name: "tick fraction", cfg: Config{Tick: 1500 * time.Millisecond}, want: []string{"tick: ", "tick 1.5s: want whole seconds"}},
		{name: "salts", cfg: Config{Salts: 300}, want: []string{"salts, retention, max-delay: hbase: invalid config: Salts 300 out of range 1..256"}},
		{name: "retention past cell TTLs", cfg: Config{Retention: 200 * 365 * 24 * time.Hour}, want: []string{"salts, retention, max-delay: ", "Retention 1752000h0m0s out of range"}},
		{name: "segment fraction", cfg: Config{Segment: 1500 * time.Millisecond}, want: []string{"segment, shards, zset-fill: zset: invalid config: segment 1.5s: want whole seconds from 1s to 24h"}},
		{name: "segment over a day", cfg: Config{Segment: 48 * time.Hour}, want: []string{"segment 48h0m0s: want whole seconds from 1s to 24h"}},
		{name: "too many shards", cfg: Config{Shards: 1 << 17}, want: []string{"segment, shards, zset-fill: ", "shards 131072: want 1 to 65536"}},
		{name: "longest segment", cfg: Config{Segment: 24 * time.Hour}},
		{name: "broker without port", cfg: Config{Brokers: []string{"kafka-1"}}, want: []string{`brokers: "kafka-1" is not host:port`}},
		{name: "api on loopback without token", cfg: Config{Roles: []string{RoleAPI}, API: "127.0.0.1:8080"}},
		{name: "api open on all interfaces", cfg: Config{Roles: []string{RoleAPI}, API: "0.0.0.0:8080"},
			want: []string{"api: 0.0.0.0:8080 is not a loopback address: set DELAYQ_API_TOKEN", "--api-insecure"}},
		{name: "api open on a name", cfg: Config{Roles: []string{RoleAPI}, API: "delayd.example:8080"}, want: []string{"DELAYQ_API_TOKEN"}},
		{name: "api with token on all interfaces", cfg: Config{Roles: []string{RoleAPI}, API: ":8080", APIToken: "0123456789abcdef"}},
		{name: "api insecure by choice", cfg: Config{Roles: []string{RoleAPI}, API: ":8080", APIInsecure: true}},
		{name: "api address unused without the role", cfg: Config{API: "0.0.0.0:8080"}},
		{name: "bad http limits", cfg: Config{Serve: httpserve.Config{MaxConns: -1}}, want: []string{"http: ", "max conns -1"}},
		{
			name: "every problem at once",
			cfg:  Config{Roles: []string{"x"}, Tick: time.Millisecond, MaxDelay: -time.Hour, Shards: -1},
			want: []string{"roles:", "tick:", "MaxDelay -1h0m0s is negative", "shards -1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.setDefaults()
			err := cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error containing %q, got nil", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A zero Config means DefaultConfig, but for the booleans (Console is on
// in DefaultConfig, off in a zero Config); a field set is kept.
func TestZeroConfigMeansDefaults(t *testing.T) {
	var zero Config
	zero.setDefaults()
	want := DefaultConfig()
	want.Console = false
	if !reflect.DeepEqual(zero, want) {
		t.Errorf("zero Config with defaults =\n%+v\nwant DefaultConfig without Console =\n%+v", zero, want)
	}
	set := Config{Prefix: "other", Tick: 5 * time.Second, APIRate: -1}
	set.setDefaults()
	if set.Prefix != "other" || set.Tick != 5*time.Second || set.APIRate != -1 || set.Table != want.Table {
		t.Errorf("set fields changed or defaults missing: %+v", set)
	}
	if d := DefaultConfig(); &d.Roles[0] == &zero.Roles[0] {
		t.Error("DefaultConfig shares its Roles slice")
	}
}

func TestHealthAndReadiness(t *testing.T) {
	d, err := New(Config{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before setup = %d, want 503", code)
	}
	d.ready.Store(true)
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz when ready = %d, want 200", code)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") ||
		!strings.Contains(body, `delayq_build_info{goversion="`+runtime.Version()+`",revision="`) {
		t.Errorf("/metrics = %d, want 200 with the Go collector and delayq_build_info:\n%s", code, body)
	}
}

// TestReadyzNamesTheDependencyDown: while a probe fails, /readyz answers
// 503 naming the dependency and delayq_dependency_up is 0 for it; one WARN
// line when it goes down, one INFO line when it is back, and then 200.
func TestReadyzNamesTheDependencyDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		d, err := New(Config{}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		var redisDown atomic.Bool
		redisDown.Store(true)
		h, err := newHealth([]probe{
			{DepKafka, func(context.Context) error { return nil }},
			{DepRedis, func(context.Context) error {
				if redisDown.Load() {
					return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 6379},
						Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
				}
				return nil
			}},
		}, d.log, d.reg)
		if err != nil {
			t.Fatal(err)
		}
		d.health.Store(h)
		d.ready.Store(true)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); h.run(ctx) }()

		readyz := func() (int, string) {
			rec := httptest.NewRecorder()
			d.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			return rec.Code, rec.Body.String()
		}
		time.Sleep(5 * time.Second)
		if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "redis: connection refused") || strings.Contains(body, "kafka") || strings.Contains(body, "10.9.8.7") {
			t.Fatalf("/readyz with Redis down = %d %q, want 503 naming redis only, without its address", code, body)
		}
		if got := testutil.ToFloat64(h.up.WithLabelValues(DepRedis)); got != 0 {
			t.Fatalf("delayq_dependency_up{redis} = %v while down", got)
		}
		if deps := h.Dependencies(); len(deps) != 2 || !deps[0].Up || deps[1].Up || deps[1].Name != DepRedis || deps[1].Error != "connection refused" {
			t.Fatalf("Dependencies() = %+v, want kafka up and redis down with its error (what the console shows)", deps)
		}
		redisDown.Store(false)
		time.Sleep(2 * time.Second)
		if code, _ := readyz(); code != http.StatusOK {
			t.Fatalf("/readyz after Redis returned = %d, want 200", code)
		}
		if got := testutil.ToFloat64(h.up.WithLabelValues(DepRedis)); got != 1 {
			t.Fatalf("delayq_dependency_up{redis} = %v after recovery", got)
		}
		cancel()
		<-done
		out := logs.String()
		if !strings.Contains(out, "10.9.8.7:6379") {
			t.Errorf("the log does not keep the address of the dependency down:\n%s", out)
		}
		if strings.Count(out, "dependency down") != 1 || strings.Count(out, "dependency up again") != 1 {
			t.Fatalf("want one down and one up line over 5 failed probes, got:\n%s", out)
		}
	})
}

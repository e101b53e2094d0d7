package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/daemon"
)

// syncBuffer is a bytes.Buffer the banner writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestEmbeddedBanner runs delayd --embedded with the api role and a token,
// and the banner's console URL and curl command exactly as printed (the
// token through $DELAYQ_API_TOKEN, as a shell would have it).
func TestEmbeddedBanner(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is not installed (CI=true, this test never skips)")
		}
		t.Skip("curl is not installed")
	}
	const token = "banner-test-token-0123456789"
	t.Setenv("DELAYQ_API_TOKEN", token)
	cfg := daemon.Config{
		Brokers: []string{freeAddr(t)}, Redis: freeAddr(t), HTTP: freeAddr(t), API: freeAddr(t),
		Roles:   append(slices.Clone(daemon.AllRoles), daemon.RoleAPI),
		Console: true, Tick: time.Second, APIToken: token,
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- runEmbedded(ctx, cfg, daemon.Options{Logger: slog.New(slog.DiscardHandler)}, &out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runEmbedded: %v", err)
		}
	})
	waitFor(t, "the banner", func() bool { return strings.Contains(out.String(), "curl ") })
	text := out.String()
	t.Logf("banner:\n%s", text)
	if strings.Contains(text, token) {
		t.Fatal("the banner prints the API token")
	}

	console := regexp.MustCompile(`Console: (http://\S+/ui/)`).FindStringSubmatch(text)
	if console == nil || console[1] != "http://"+cfg.HTTP+"/ui/" {
		t.Fatalf("banner names no console URL on %s", cfg.HTTP)
	}
	waitFor(t, "the console", func() bool {
		res, err := http.Get(console[1])
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	})

	var curl string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "curl ") {
			curl = strings.TrimSpace(l)
		}
	}
	waitFor(t, "the API", func() bool {
		c, err := net.Dial("tcp", cfg.API)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	got, err := exec.Command("sh", "-c", curl).Output()
	var receipt struct{ ID, Input string }
	if err != nil || json.Unmarshal(got, &receipt) != nil || receipt.ID == "" || receipt.Input != "delay-input" {
		t.Fatalf("the banner's %s: %v, answered %s; want a receipt", curl, err, got)
	}

	var plain bytes.Buffer
	cfg.APIToken = ""
	banner(&plain, cfg, "k:1", "r:1")
	if strings.Contains(plain.String(), "Authorization") || !strings.Contains(plain.String(), "Content-Type: application/json") {
		t.Errorf("banner without a token:\n%s", plain.String())
	}
	cfg.Roles, cfg.Console = daemon.AllRoles, false
	plain.Reset()
	banner(&plain, cfg, "k:1", "r:1")
	if strings.Contains(plain.String(), "curl") || strings.Contains(plain.String(), "Console") {
		t.Errorf("banner without the api role and the console:\n%s", plain.String())
	}
}

// An embedded start logs no loss of the Redis index (there is no HBase
// and nothing to lose): the first check of the repair records a new
// index, and neither WARNs nor repairs.
func TestEmbeddedStartLogsNoRepair(t *testing.T) {
	cfg := daemon.DefaultConfig()
	cfg.Brokers, cfg.Redis, cfg.HTTP, cfg.Tick = []string{freeAddr(t)}, freeAddr(t), freeAddr(t), time.Second
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runEmbedded(ctx, cfg, daemon.Options{Logger: logger}, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runEmbedded: %v", err)
		}
	})
	waitFor(t, "delayd ready", func() bool { return strings.Contains(logs.String(), `"delayd ready"`) })
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Redis})
	defer rdb.Close()
	waitFor(t, "the first check of the index", func() bool {
		id, _ := rdb.HGet(ctx, cfg.Prefix+":generation", "id").Result()
		return id != ""
	})
	text := logs.String()
	t.Logf("log of an embedded start:\n%s", text)
	for _, bad := range []string{"lost data", "index repair", `"level":"WARN"`, `"level":"ERROR"`} {
		if strings.Contains(text, bad) {
			t.Errorf("an embedded start logs %s", bad)
		}
	}
}

// A taken --http or --api port and a token too short end embedded mode
// with one line that names the flag or variable, BEFORE the banner: stdout
// stays empty.
func TestEmbeddedRefusesBeforeBanner(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().String()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
		code int
	}{
		{name: "http port taken", args: []string{"--http", busy},
			want: "delayd: --http " + busy + ": address already in use; pick another with --http\n", code: ExitFailure},
		{name: "api port taken", args: []string{"--roles", "ingest,dispatcher,scanner,api", "--api", busy},
			want: "delayd: --api " + busy + ": address already in use; pick another with --api\n", code: ExitFailure},
		{name: "short API token", args: []string{"--roles", "ingest,dispatcher,scanner,api"}, env: map[string]string{"DELAYQ_API_TOKEN": "12345"},
			want: "delayd: DELAYQ_API_TOKEN: 5 bytes, want at least 16 (for example: export DELAYQ_API_TOKEN=$(openssl rand -hex 16))\n", code: ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--embedded", "--brokers", freeAddr(t), "--redis", freeAddr(t), "--http", freeAddr(t), "--api", freeAddr(t)}
			code, out, errs := runMain(t, append(args, tc.args...), tc.env)
			if code != tc.code || errs != tc.want || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stderr %q and no banner", code, out, errs, tc.code, tc.want)
			}
		})
	}
}

package redisconn

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/deploy/stacktest"
)

// Ports of the master and replica the Replicas tests start (the range
// of e2e/redisha).
const (
	testMasterPort  = 21301
	testReplicaPort = 21302
)

// startRedis runs a redis-server of its own on port (Debian's, which
// deploy/local/stack installs) until the test ends, and returns a client.
func startRedis(t testing.TB, port int, args ...string) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if stacktest.CI() {
			t.Fatalf("redis-server not found (CI=true): %v", err)
		}
		t.Skipf("redis-server not found: run `make up` once to install it (%v)", err)
	}
	cmd := exec.Command(bin, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	t.Cleanup(func() { c.Close() })
	waitFor(t, func() bool { return c.Ping(context.Background()).Err() == nil })
	return c
}

func waitFor(t testing.TB, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// TestReplicas runs WAIT against a real master and replica: the writes
// reach the replica, a replica down is ErrTooFewReplicas, and a promoted
// replica has another Mark.
func TestReplicas(t *testing.T) {
	ctx := context.Background()
	master := startRedis(t, testMasterPort)
	replica := startRedis(t, testReplicaPort, "--replicaof", "127.0.0.1", strconv.Itoa(testMasterPort))
	waitFor(t, func() bool {
		info, _ := replica.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})

	r := NewReplicas(master, "test", 1, 200*time.Millisecond)
	before, err := r.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := master.ZAdd(ctx, "test:z", redis.Z{Score: 1, Member: "a"}).Err(); err != nil {
		t.Fatal(err)
	}
	after, err := r.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait with the replica up: %v", err)
	}
	if after != before {
		t.Fatalf("mark changed without a failover: %q, then %q", before, after)
	}
	// What the master acknowledged before the WAIT is on the replica.
	if n, err := replica.ZCard(ctx, "test:z").Result(); err != nil || n != 1 {
		t.Fatalf("replica's test:z has %d members (%v), want 1", n, err)
	}
	if _, err := NewReplicas(master, "test", 2, 200*time.Millisecond).Wait(ctx); !errors.Is(err, ErrTooFewReplicas) {
		t.Fatalf("Wait for 2 replicas of 1: %v, want ErrTooFewReplicas", err)
	}

	// The replica promoted: its Mark differs from the old master's.
	if err := replica.Do(ctx, "replicaof", "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	promoted, err := NewReplicas(replica, "test", 0, 0).Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if promoted == before {
		t.Fatalf("the promoted replica has the old master's mark %q", before)
	}
	// The old master has lost its replica: a WAIT times out.
	if _, err := r.Wait(ctx); !errors.Is(err, ErrTooFewReplicas) {
		t.Fatalf("Wait without a replica: %v, want ErrTooFewReplicas", err)
	}
}

func TestReplID(t *testing.T) {
	for _, tt := range []struct {
		name, info, want string
		bad              bool
	}{
		{"master", "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nmaster_replid:abc\r\nmaster_replid2:000\r\n", "abc", false},
		{"replica", "# Replication\r\nrole:slave\r\nmaster_replid:abc\r\n", "", true},
		{"no id", "role:master\r\n", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := replID(tt.info)
			if (err != nil) != tt.bad || got != tt.want {
				t.Fatalf("replID = %q, %v; want %q (error %v)", got, err, tt.want, tt.bad)
			}
		})
	}
}

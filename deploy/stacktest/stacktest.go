package stacktest

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// Kafka returns the bootstrap brokers of the local Kafka.
func Kafka(tb testing.TB) []string {
	tb.Helper()
	brokers := strings.Split(env("DELAYQ_BROKERS", "127.0.0.1:9092"), ",")
	require(tb, "Kafka", brokers[0])
	return brokers
}

// Redis returns the address of the local Redis.
func Redis(tb testing.TB) string {
	tb.Helper()
	addr := env("DELAYQ_REDIS", "127.0.0.1:6379")
	require(tb, "Redis", addr)
	return addr
}

// HBase returns the ZooKeeper quorum of the local HBase.
func HBase(tb testing.TB) string {
	tb.Helper()
	zk := env("DELAYQ_HBASE_ZK", "127.0.0.1:2181")
	require(tb, "HBase ZooKeeper", strings.Split(zk, ",")[0])
	return zk
}

// CI reports whether the tests run under CI, where a missing service fails.
func CI() bool { return os.Getenv("CI") == "true" }

func require(tb testing.TB, name, addr string) {
	tb.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		conn.Close()
		return
	}
	if CI() {
		tb.Fatalf("%s is not reachable at %s (CI=true, integration tests never skip): %v", name, addr, err)
	}
	tb.Skipf("%s is not reachable at %s: run `make up` to start the local stack (%v)", name, addr, err)
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

package redisloss

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/e2e/e2etest"
)

// The private stack's ports: none is the shared stack's or another test
// package's.
const (
	kafkaPort      = 22092
	controllerPort = 22093
	redisPort      = 22379
)

// private is the package's Kafka and Redis (HBase is the shared one).
var private = &e2etest.PrivateStack{Name: "e2e-redisloss", Services: []string{"kafka", "redis"}, Env: []string{
	"KAFKA_PORT=" + strconv.Itoa(kafkaPort),
	"KAFKA_CONTROLLER_PORT=" + strconv.Itoa(controllerPort),
	"REDIS_PORT=" + strconv.Itoa(redisPort),
	"KAFKA_HEAP=384m",
}}

func TestMain(m *testing.M) {
	code := e2etest.Main(m)
	if err := private.Teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "redisloss: removing the private stack:", err)
	}
	os.Exit(code)
}

// stack returns the test's Env on the private Kafka and Redis and the
// shared HBase, starting the private stack on first use. A stack that does
// not start fails the test under CI=true and skips it otherwise.
func stack(t *testing.T) *e2etest.Env {
	t.Helper()
	if testing.Short() && !stacktest.CI() {
		t.Skip("-short: starts a stack of its own and runs about 3 minutes")
	}
	zk := stacktest.HBase(t)
	if err := private.Start(); err != nil {
		if stacktest.CI() {
			t.Fatalf("private stack did not start (CI=true, integration tests never skip): %v", err)
		}
		t.Skipf("private stack did not start: %v", err)
	}
	return e2etest.NewEnv(t, e2etest.Stack{Brokers: []string{addr(kafkaPort)}, Redis: addr(redisPort), ZK: zk}, "rl")
}

// start returns the test's Env, one delayd that checks the index every
// second (lookback: --repair-lookback) and a client of the private Redis,
// closed when the test ends.
func start(t *testing.T) (*e2etest.Env, *e2etest.Delayd, *redis.Client) {
	t.Helper()
	e := stack(t)
	d := e.Start("a", "--repair-interval", "1s", "--repair-lookback", lookback.String())
	rdb := redis.NewClient(&redis.Options{Addr: e.Redis})
	t.Cleanup(func() { rdb.Close() })
	return e, d, rdb
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

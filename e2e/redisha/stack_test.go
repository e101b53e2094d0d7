package redisha

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/e2e/e2etest"
)

// The private stack's ports (21000-21999 are this package's).
const (
	kafkaPort      = 21092
	controllerPort = 21093
	masterPort     = 21379 // Sentinel's first master
	replicaPort    = 21380
	masterName     = "delayq"
)

var (
	sentinelPorts       = []int{21381, 21382, 21383}
	clusterPorts        = []int{21401, 21402, 21403}
	clusterReplicaPorts = []int{21404, 21405, 21406}
)

var private = &e2etest.PrivateStack{
	Name: "e2e-redisha",
	Services: []string{"kafka", "redis", "redis-replica", "sentinel-1", "sentinel-2", "sentinel-3",
		"redis-cluster"},
	Env: []string{
		"KAFKA_PORT=" + strconv.Itoa(kafkaPort),
		"KAFKA_CONTROLLER_PORT=" + strconv.Itoa(controllerPort),
		"KAFKA_HEAP=384m",
		"REDIS_SENTINEL=1",
		"REDIS_PORT=" + strconv.Itoa(masterPort),
		"REDIS_REPLICA_PORT=" + strconv.Itoa(replicaPort),
		"SENTINEL_PORTS=" + ports(sentinelPorts, " "),
		"REDIS_SENTINEL_MASTER=" + masterName,
		"SENTINEL_DOWN_AFTER=3000", // see doc.go
		"REDIS_CLUSTER=1",
		"REDIS_CLUSTER_PORTS=" + ports(clusterPorts, " "),
		"REDIS_CLUSTER_REPLICA_PORTS=" + ports(clusterReplicaPorts, " "),
	},
}

func TestMain(m *testing.M) {
	os.Exit(e2etest.MainPrivate(m, private))
}

var addr = e2etest.Addr

// ports joins the addresses of ps with sep, or the bare ports with " ".
func ports(ps []int, sep string) string {
	var s []string
	for _, p := range ps {
		if sep == " " {
			s = append(s, strconv.Itoa(p))
		} else {
			s = append(s, addr(p))
		}
	}
	return strings.Join(s, sep)
}

// stack returns the test's Env on the private Kafka and the shared HBase,
// starting the private stack on first use. The Env has no Redis: its
// cleanup would drop keys with a single-node client; the private Redis
// goes with the stack, and each test passes its --redis flags.
func stack(t *testing.T) *e2etest.Env {
	t.Helper()
	zk := stacktest.HBase(t)
	private.Require(t, "the Redis failover tests start a Kafka and Redis servers of their own")
	return e2etest.NewEnv(t, e2etest.Stack{Brokers: []string{addr(kafkaPort)}, ZK: zk}, "ha")
}

// stackCmd runs deploy/local/stack on the private stack.
func stackCmd(t *testing.T, args ...string) {
	t.Helper()
	if _, err := private.Cmd(args...); err != nil {
		t.Fatal(err)
	}
}

// linkUp reports whether the Redis on port is a replica in sync with its
// master (master_link_status:up): WAIT counts it from then on.
func linkUp(port int) bool {
	c := redis.NewClient(&redis.Options{Addr: addr(port), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "replication").Result()
	return err == nil && strings.Contains(info, "master_link_status:up")
}

// isMaster reports whether the Redis on port answers as a master (with
// slots, for a cluster node).
func isMaster(port int) bool {
	c := redis.NewClient(&redis.Options{Addr: addr(port), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	role, err := c.Do(ctx, "role").Slice()
	return err == nil && len(role) > 0 && role[0] == "master"
}

// waitFor polls ok every 100 ms until it holds (it returns when) or
// limit has passed (it fails the test).
func waitFor(t *testing.T, what string, limit time.Duration, ok func() bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Now()
}

// sentinelsName reports whether every sentinel names the Redis on port
// the master.
func sentinelsName(port int) bool {
	for _, s := range sentinelPorts {
		c := redis.NewSentinelClient(&redis.Options{Addr: addr(s), MaxRetries: -1, DialTimeout: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		a, err := c.GetMasterAddrByName(ctx, masterName).Result()
		cancel()
		c.Close()
		if err != nil || len(a) != 2 || a[1] != strconv.Itoa(port) {
			return false
		}
	}
	return true
}

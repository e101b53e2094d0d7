package cluster

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/internal/redisconn"
)

// The private stack's ports: none is the shared stack's or e2e/fault's.
const (
	kafkaPort      = 29092
	controllerPort = 29093
)

// clusterPorts are the Redis Cluster masters' ports.
var clusterPorts = []int{17101, 17102, 17103}

// private is the package's Kafka and Redis Cluster (HBase is the shared one).
var private = &e2etest.PrivateStack{Name: "e2e-cluster", Services: []string{"kafka", "redis-cluster"}, Env: clusterEnv()}

func clusterEnv() []string {
	var ports []string
	for _, p := range clusterPorts {
		ports = append(ports, strconv.Itoa(p))
	}
	return []string{
		"KAFKA_PORT=" + strconv.Itoa(kafkaPort),
		"KAFKA_CONTROLLER_PORT=" + strconv.Itoa(controllerPort),
		"REDIS_CLUSTER=1",
		"REDIS_CLUSTER_PORTS=" + strings.Join(ports, " "),
		"KAFKA_HEAP=384m",
	}
}

func TestMain(m *testing.M) {
	os.Exit(e2etest.MainPrivate(m, private))
}

// stack returns the test's Env on the private Kafka and Redis Cluster and
// the shared HBase, starting the private stack on first use. A stack that
// does not start fails the test under CI=true and skips it otherwise.
func stack(t *testing.T) *e2etest.Env {
	t.Helper()
	zk := stacktest.HBase(t)
	private.Require(t, "the cluster tests start a Kafka and a Redis Cluster of their own")
	// No Redis in the Env: its cleanup would drop keys with a single-node
	// client. The cluster goes with the private stack.
	return e2etest.NewEnv(t, e2etest.Stack{Brokers: []string{addr(kafkaPort)}, ZK: zk}, "cl")
}

// seeds is the --redis value of the cluster.
func seeds() string {
	var s []string
	for _, p := range clusterPorts {
		s = append(s, addr(p))
	}
	return strings.Join(s, ",")
}

// delaydFlags run delayd on the cluster with 12-partition topics.
func delaydFlags() []string { return []string{"--redis", seeds(), "--partitions", "12"} }

// clusterClient returns a client of the cluster, closed when the test ends.
func clusterClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	rdb, err := redisconn.New(redisconn.Config{Addrs: redisconn.SplitAddrs(seeds())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

var addr = e2etest.Addr

// masterOf returns the port of the master that serves key.
func masterOf(t *testing.T, rdb redis.UniversalClient, key string) int {
	t.Helper()
	ctx := context.Background()
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) {
			_, port, _ := strings.Cut(s.Nodes[0].Addr, ":")
			p, err := strconv.Atoi(port)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no master serves slot %d of %s", slot, key)
	return 0
}

// commandStats returns, for each master port, the calls of every command
// it has served since it started (INFO commandstats).
func commandStats(t *testing.T, rdb redis.UniversalClient) map[int]map[string]int64 {
	t.Helper()
	var mu sync.Mutex
	out := map[int]map[string]int64{}
	err := redisconn.ForEachMaster(context.Background(), rdb, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		_, port, _ := strings.Cut(c.Options().Addr, ":")
		p, _ := strconv.Atoi(port)
		calls := map[string]int64{}
		for line := range strings.SplitSeq(info, "\n") {
			// cmdstat_zadd:calls=123,usec=...
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok {
				continue
			}
			n, _, _ := strings.Cut(rest, ",")
			calls[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.ParseInt(n, 10, 64)
		}
		mu.Lock()
		out[p] = calls
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

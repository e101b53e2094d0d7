package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redisconn"
)

// TestClusterClient: several seeds make a cluster client that reaches
// every master; one seed without --redis-cluster makes a single-node
// client, and Ping says the address is a cluster node instead of letting
// MOVED errors come later; one seed with Cluster set works.
func TestClusterClient(t *testing.T) {
	private.Require(t, "the cluster tests start a Kafka and a Redis Cluster of their own")
	ctx := context.Background()
	rdb := clusterClient(t)
	if err := redisconn.Ping(ctx, rdb); err != nil {
		t.Fatalf("Ping of the cluster: %v", err)
	}
	var masters atomic.Int32
	if err := redisconn.ForEachMaster(ctx, rdb, func(context.Context, *redis.Client) error {
		masters.Add(1)
		return nil
	}); err != nil || masters.Load() != int32(len(clusterPorts)) {
		t.Fatalf("ForEachMaster: %d masters, %v; want %d", masters.Load(), err, len(clusterPorts))
	}

	one, err := redisconn.New(redisconn.Config{Addrs: []string{addr(clusterPorts[0])}})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if err := redisconn.Ping(ctx, one); !errors.Is(err, redisconn.ErrClusterNode) {
		t.Fatalf("Ping of one node with a single-node client = %v, want ErrClusterNode", err)
	}
	seed, err := redisconn.New(redisconn.Config{Addrs: []string{addr(clusterPorts[1])}, Cluster: true})
	if err != nil {
		t.Fatal(err)
	}
	defer seed.Close()
	if err := redisconn.Ping(ctx, seed); err != nil {
		t.Fatalf("Ping with one seed and Cluster: %v", err)
	}
	// Keys of every slot through the one seed: no MOVED reaches the caller.
	for i := range 100 {
		k := "cl-client:k:" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := seed.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s through one seed: %v", k, err)
		}
	}
}

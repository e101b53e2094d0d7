package zset

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/redis/go-redis/v9"
)

// realRedis connects to the local stack's Redis and returns a prefix unique
// to this test; every key under it is deleted at cleanup.
func realRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	return stacktest.RedisPrefix(t, "dqtest-zset")
}

// realIndex is an index on the local stack's Redis under a prefix of its
// own, dropped at cleanup.
func realIndex(t *testing.T, cfg Config) (*Index, redis.UniversalClient) {
	t.Helper()
	c, prefix := realRedis(t)
	cfg.Prefix = prefix
	ix, err := New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ix, c
}

// The Lua scripts, ZADD NX and ZMSCORE as the real Redis runs them.
func TestRealRedisReusedID(t *testing.T) { testReusedID(t, realIndex) }
func TestRealRedisModel(t *testing.T)    { testModel(t, realIndex) }
func TestRealRedisBadEntry(t *testing.T) { testAddBadEntry(t, realIndex) }

// TestRedisCluster runs the index tests against a Redis Cluster, whose
// seeds DELAYQ_TEST_REDIS_CLUSTER lists (comma-separated): every command
// and script must touch one key, and pipelines span slots. The local stack
// does not start a cluster yet, so without the variable the test skips,
// also under CI.
func TestRedisCluster(t *testing.T) {
	seeds := os.Getenv("DELAYQ_TEST_REDIS_CLUSTER")
	if seeds == "" {
		t.Skip("set DELAYQ_TEST_REDIS_CLUSTER=host:port,... to run against a Redis Cluster")
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(seeds, ",")})
	t.Cleanup(func() { c.Close() })
	clusterIndex := func(t *testing.T, cfg Config) (*Index, redis.UniversalClient) {
		cfg.Prefix = fmt.Sprintf("dqtest-zset-cluster-%d", time.Now().UnixNano())
		t.Cleanup(func() {
			_ = c.ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
				stacktest.DropKeys(t, node, cfg.Prefix)
				return nil
			})
		})
		ix, err := New(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return ix, c
	}
	t.Run("ReusedID", func(t *testing.T) { testReusedID(t, clusterIndex) })
	t.Run("Model", func(t *testing.T) { testModel(t, clusterIndex) })
	t.Run("BadEntry", func(t *testing.T) { testAddBadEntry(t, clusterIndex) })
	t.Run("Index", func(t *testing.T) { testIndex(t, clusterIndex) })
	t.Run("Families", func(t *testing.T) { testFamilies(t, clusterIndex) })
	t.Run("FamiliesConcurrent", func(t *testing.T) { testFamiliesConcurrent(t, clusterIndex) })
	t.Run("SparseInFlight", func(t *testing.T) { testSparseInFlight(t, clusterIndex) })
	t.Run("DueGroups", func(t *testing.T) { testDueGroups(t, clusterIndex) })
}

// The foundation's check that go-redis pipelines ZADD and reads
// ZRANGEBYSCORE with LIMIT and scores against a real Redis.
func TestRealRedisPipelineZAddRangeByScoreLimit(t *testing.T) {
	ctx := context.Background()
	c, prefix := realRedis(t)
	key := prefix + ":pipe"
	pl := c.Pipeline()
	const n = 3000
	for i := range n {
		// ids near 2^63 and scores in unix ms must come back exactly.
		pl.ZAdd(ctx, key, redis.Z{Score: float64(1_738_335_540_000 + int64(i)), Member: strconv.FormatUint(1<<63+uint64(i), 10)})
	}
	cmds, err := pl.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != n {
		t.Fatalf("pipeline ran %d commands, want %d", len(cmds), n)
	}
	zs, err := c.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: "-inf", Max: "1738335540999", Offset: 0, Count: 100}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(zs) != 100 {
		t.Fatalf("LIMIT 0 100 returned %d", len(zs))
	}
	for i, z := range zs {
		if z.Member != strconv.FormatUint(1<<63+uint64(i), 10) || int64(z.Score) != 1_738_335_540_000+int64(i) {
			t.Fatalf("member %d = %v %v", i, z.Member, z.Score)
		}
	}
	if enc := c.ObjectEncoding(ctx, key).Val(); enc != "skiplist" {
		t.Logf("encoding of a %d-member zset: %s", n, enc)
	}
}

func TestRealRedisIndex(t *testing.T) { testIndex(t, realIndex) }

// testIndex adds tasks over two segments, drains the due ones as a scanner
// would, and retires the drained segment.
func testIndex(t *testing.T, newIndex newIndexFunc) {
	ctx := context.Background()
	ix, _ := newIndex(t, Config{Shards: 8})
	now := time.Now()
	segStart := now.Truncate(time.Minute)
	var due, later []Entry
	for i := range 500 {
		// overdue by up to an hour: all land in the segment of now
		due = append(due, Entry{ID: 1<<62 + uint64(i), ExecAt: now.Add(-time.Duration(i) * time.Second * 7).UnixMilli()})
	}
	for i := range 300 {
		later = append(later, Entry{ID: 1<<61 + uint64(i), ExecAt: segStart.Add(2*time.Minute + time.Duration(i)*time.Second).UnixMilli()})
	}
	if err := ix.Writer().Add(ctx, now, append(slices.Clone(due), later...)); err != nil {
		t.Fatal(err)
	}

	backlog, err := ix.Maintenance().Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range backlog {
		total += s.Pending
		if s.End <= now.UnixMilli() {
			t.Fatalf("segment %s ended before now but was written", s.Segment)
		}
	}
	if total != 800 {
		t.Fatalf("backlog total = %d, want 800: %+v", total, backlog)
	}
	if backlog[0].Pending != 500 {
		t.Fatalf("segment of now holds %d, want the 500 overdue entries", backlog[0].Pending)
	}

	// Drain everything due by now, as a scanner would: Due, then Remove.
	until := now.UnixMilli()
	keys, err := ix.Reader().DueKeys(ctx, until)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 8 {
		t.Fatalf("DueKeys = %d keys, want all 8 shards of the current segment: %v", len(keys), keys)
	}
	var drained []Entry
	for _, k := range keys {
		for {
			es, err := ix.Reader().Due(ctx, k, until, 20)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) == 0 {
				break
			}
			if err := ix.Reader().Remove(ctx, k, es); err != nil {
				t.Fatal(err)
			}
			drained = append(drained, es...)
		}
	}
	byID := func(a, b Entry) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	}
	slices.SortFunc(drained, byID)
	slices.SortFunc(due, byID)
	if !slices.Equal(drained, due) {
		t.Fatalf("drained %d entries, want exactly the %d due ones", len(drained), len(due))
	}
	if keys, _ := ix.Reader().DueKeys(ctx, until); len(keys) != 0 {
		t.Fatalf("after draining DueKeys = %v", keys)
	}
	for _, e := range later[:3] {
		if ok, err := ix.Maintenance().Pending(ctx, e); err != nil || !ok {
			t.Fatalf("Pending(%+v) = %v, %v; want true", e, ok, err)
		}
	}
	if ok, _ := ix.Maintenance().Pending(ctx, due[0]); ok {
		t.Fatal("a drained entry is still pending")
	}

	// The drained current segment retires once it has ended; the later one
	// never while it holds members.
	if n, err := ix.Maintenance().Retire(ctx, segStart.Add(time.Minute).UnixMilli()); err != nil || n != 1 {
		t.Fatalf("Retire = %d, %v; want 1", n, err)
	}
	if n, err := ix.Maintenance().Retire(ctx, segStart.Add(time.Hour).UnixMilli()); err != nil || n != 0 {
		t.Fatalf("Retire of non-empty segments = %d, %v; want 0", n, err)
	}
	backlog, _ = ix.Maintenance().Backlog(ctx)
	if len(backlog) == 0 || backlog[0].Start != segStart.Add(2*time.Minute).UnixMilli() {
		t.Fatalf("backlog after retire = %+v", backlog)
	}
}

// Shard families on the real Redis: sealing, growth while scanned.
func TestRealRedisFamilies(t *testing.T)           { testFamilies(t, realIndex) }
func TestRealRedisFamiliesConcurrent(t *testing.T) { testFamiliesConcurrent(t, realIndex) }
func TestRealRedisSparseInFlight(t *testing.T)     { testSparseInFlight(t, realIndex) }
func TestRealRedisDueGroups(t *testing.T)          { testDueGroups(t, realIndex) }

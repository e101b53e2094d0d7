package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"

	"github.com/delayq/delayq/deploy/stacktest"
	dqkafka "github.com/delayq/delayq/kafka"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// TestRunRealStack runs the ingester on the local stack: real Kafka (topics
// and a consumer group of its own), the HBase store on a fresh pre-split
// table and the zset index under a fresh Redis prefix.
func TestRunRealStack(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	brokers := stacktest.Kafka(t)
	raddr := stacktest.Redis(t)
	zk := stacktest.HBase(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	nanos := time.Now().UnixNano()
	suffix := strconv.FormatInt(nanos, 10)
	input, slow, failed := "dqtest-ingest-in-"+suffix, "dqtest-ingest-slow-"+suffix, "dqtest-ingest-failed-"+suffix
	err := dqkafka.EnsureTopics(ctx, brokers, []dqkafka.TopicSpec{
		{Name: input, Partitions: 3, ReplicationFactor: 1},
		{Name: slow, Partitions: 2, ReplicationFactor: 1},
		{Name: failed, Partitions: 2, ReplicationFactor: 1},
	})
	if err != nil {
		t.Fatal(err)
	}

	const salts = 4
	table := fmt.Sprintf("delayq_test_ingest_%d", nanos)
	if err := payload.CreateTable(ctx, zk, table, salts); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() { dropTable(t, zk, table) })
	store, err := payload.NewHBase(payload.HBaseConfig{ZK: zk, Table: table, Salts: salts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)

	rdb := redis.NewClient(&redis.Options{Addr: raddr})
	prefix := "dqtest-ingest-" + suffix
	t.Cleanup(func() { dropKeys(t, rdb, prefix); rdb.Close() })
	ix, err := zset.New(rdb, zset.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}

	w := dqkafka.NewWriter(dqkafka.WriterConfig{Brokers: brokers})
	t.Cleanup(func() { w.Close() })

	s := &scenario{
		brokers: brokers,
		store:   store,
		ix:      ix,
		w:       w,
		input:   input,
		slow:    slow,
		failed:  failed,
		group:   "dqtest-ingest-" + suffix,
		n:       400,
		timeout: 45 * time.Second,
		logf:    t.Logf,
		tb:      t,
		ctx:     ctx,
	}
	s.run()
}

func dropTable(t *testing.T, zk, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ac := gohbase.NewAdminClient(zk, gohbase.Logger(slog.New(slog.DiscardHandler)))
	if err := ac.DisableTable(hrpc.NewDisableTable(ctx, []byte(table))); err != nil {
		t.Logf("disable %s: %v", table, err)
		return
	}
	if err := ac.DeleteTable(hrpc.NewDeleteTable(ctx, []byte(table))); err != nil {
		t.Logf("delete %s: %v", table, err)
	}
}

func dropKeys(t *testing.T, rdb *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Logf("drop keys %s:*: %v", prefix, err)
	}
}

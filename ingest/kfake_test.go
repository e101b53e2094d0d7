package ingest

import (
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// TestRunInProcess runs the whole ingester (real kafka-go readers, consumer
// group, commits) against franz-go's in-process Kafka, the in-memory payload
// store and a zset index on miniredis.
func TestRunInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	input, slow, failed := "in-"+suffix, "slow-"+suffix, "failed-"+suffix
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, input, slow, failed))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()

	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ix, err := zset.New(rdb, zset.Config{Prefix: "t-" + suffix})
	if err != nil {
		t.Fatal(err)
	}
	w := producer.New(producer.Config{Brokers: brokers})
	t.Cleanup(func() { w.Close() })

	s := &scenario{
		brokers: brokers,
		store:   payload.NewMemory(),
		ix:      ix,
		w:       w,
		input:   input,
		slow:    slow,
		failed:  failed,
		group:   "g-" + suffix,
		n:       300,
		timeout: 30 * time.Second,
		logf:    t.Logf,
		tb:      t,
		ctx:     t.Context(),
	}
	s.run()
}

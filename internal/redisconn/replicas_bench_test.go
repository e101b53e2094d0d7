package redisconn

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/delayq/delayq/zset"
)

// BenchmarkReplicasWait is the cost of --redis-min-replicas per ingest
// batch: a batch of 4,000 entries (ingest's default batch) added with
// zset.Index, due over the next 10 minutes, to a master that has one
// replica (both redis-servers of the benchmark's own, AOF off), without a
// wait (min-replicas=0) and with Mark before and Wait after
// (min-replicas=1). The figures go to docs/performance.md.
func BenchmarkReplicasWait(b *testing.B) {
	ctx := context.Background()
	master := startRedis(b, testMasterPort+10)
	startRedis(b, testReplicaPort+10, "--replicaof", "127.0.0.1", strconv.Itoa(testMasterPort+10))
	waitFor(b, func() bool { _, err := NewReplicas(master, "bench", 1, time.Second).Wait(ctx); return err == nil })
	const size = 4000
	rng := rand.New(rand.NewPCG(1, 2))
	next := uint64(1 << 40)
	batch := func() []zset.Entry {
		base := time.Now().Add(time.Minute).UnixMilli()
		es := make([]zset.Entry, size)
		for i := range es {
			next++
			es[i] = zset.Entry{ID: next << 12, ExecAt: base + rng.Int64N(int64(10*time.Minute/time.Millisecond))}
		}
		return es
	}
	for _, n := range []int{0, 1} {
		b.Run("min-replicas="+strconv.Itoa(n), func(b *testing.B) {
			ix, err := zset.New(master, zset.Config{Prefix: "bench" + strconv.Itoa(n)})
			if err != nil {
				b.Fatal(err)
			}
			r := NewReplicas(master, "bench", n, time.Second)
			for b.Loop() {
				b.StopTimer()
				es := batch()
				b.StartTimer()
				if n > 0 {
					if _, err := r.Mark(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if err := ix.Add(ctx, time.Now(), es); err != nil {
					b.Fatal(err)
				}
				if n > 0 {
					if _, err := r.Wait(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/batch")
		})
	}
}

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
// (min-replicas=1). wait-ms/batch is the time in Mark and Wait alone,
// which a busy machine disturbs less than the whole batch. The figures go
// to docs/performance.md.
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
			var waited time.Duration // in Mark and Wait
			for b.Loop() {
				b.StopTimer()
				es := batch()
				b.StartTimer()
				t0 := time.Now()
				if n > 0 {
					if _, err := r.Mark(ctx); err != nil {
						b.Fatal(err)
					}
				}
				waited += time.Since(t0)
				if err := ix.Writer().Add(ctx, time.Now(), es); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if n > 0 {
					if _, err := r.Wait(ctx); err != nil {
						b.Fatal(err)
					}
				}
				waited += time.Since(t1)
			}
			b.ReportMetric(float64(waited.Microseconds())/float64(b.N)/1000, "wait-ms/batch")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/batch")
		})
	}
}

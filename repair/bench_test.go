package repair

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/zset"
)

// BenchmarkRunRealStack repairs a wiped index of $DELAYQ_REPAIR_TASKS
// pending tasks (default 100,000, due over the next hour) from a table of
// the shared stack's HBase (16 salts, one RegionServer) into its Redis,
// and reports rows scanned and tasks re-indexed per second:
//
//	DELAYQ_REPAIR_TASKS=1000000 go test -run '^$' -bench RunRealStack -benchtime 1x -timeout 30m ./repair
func BenchmarkRunRealStack(b *testing.B) {
	n := 100_000
	if v := os.Getenv("DELAYQ_REPAIR_TASKS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	zk := stacktest.HBase(b)
	rdb, prefix := stacktest.RedisPrefix(b, "repair-bench")
	table := fmt.Sprintf("delayq_bench_repair_%d", time.Now().UnixNano())
	ctx := b.Context()
	if err := hbase.CreateTable(ctx, zk, "", table, 16); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stacktest.DropTable(b, zk, table) })
	store, err := hbase.New(hbase.Config{ZK: zk, Table: table, Salts: 16})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(store.Close)
	zix, err := zset.New(rdb, zset.Config{Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	ix := zix.Repairer()
	base := time.Now().Add(time.Minute).UnixMilli()
	step := max(time.Hour.Milliseconds()/int64(n), 1)
	start := time.Now()
	for lo := 0; lo < n; lo += 10_000 {
		var tasks []payload.Task
		var ids []payload.IDWrite
		for i := lo; i < min(lo+10_000, n); i++ {
			name := fmt.Sprintf("bench-%d", i)
			t := payload.Task{ID: payload.TaskID(name), Name: name, Topic: "orders", ExecAt: base + int64(i)*step, Value: make([]byte, 100)}
			tasks = append(tasks, t)
			ids = append(ids, payload.IDWrite{ID: t.ID, Submitted: t.ExecAt, SubmitRecorded: start.UnixMilli()})
		}
		if err := store.Put(ctx, tasks); err != nil {
			b.Fatal(err)
		}
		if err := store.PutIDs(ctx, ids); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("stored %d tasks and id rows in %v", n, time.Since(start).Round(time.Millisecond))
	cfg := Config{From: base, To: base + time.Hour.Milliseconds() + 1}
	if os.Getenv("DELAYQ_REPAIR_SCANONLY") != "" {
		start := time.Now()
		rows := 0
		if err := store.Scan(ctx, cfg.From, cfg.To, func(payload.Task) error { rows++; return nil }); err != nil {
			b.Fatal(err)
		}
		b.Logf("scan alone: %d rows in %v", rows, time.Since(start))
	}
	for b.Loop() {
		b.StopTimer()
		stacktest.DropKeys(b, rdb, prefix)
		b.StartTimer()
		start := time.Now()
		ts, ti := &timedStore{WatchStore: store}, &timedIndex{WatchIndex: ix}
		cfg.Unchecked = os.Getenv("DELAYQ_REPAIR_UNCHECKED") != ""
		stats, err := Run(ctx, cfg, ts, ti)
		b.Logf("id rows read in %v, index checks %v (summed over checkers), adds %v", ts.ids, time.Duration(ti.pending.Load()), ti.add)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if stats.Reindexed != int64(n) {
			b.Fatalf("re-indexed %d of %d", stats.Reindexed, n)
		}
		b.ReportMetric(float64(stats.Scanned)/took.Seconds(), "rows/s")
		b.ReportMetric(float64(stats.Reindexed)/took.Seconds(), "reindexed/s")
		b.Logf("%d tasks re-indexed in %v", n, took.Round(time.Millisecond))
	}
}

type timedStore struct {
	WatchStore
	ids time.Duration
}

func (s *timedStore) GetIDs(ctx context.Context, ids []uint64) ([]payload.IDState, error) {
	defer func(t time.Time) { s.ids += time.Since(t) }(time.Now())
	return s.WatchStore.GetIDs(ctx, ids)
}

type timedIndex struct {
	WatchIndex
	pending atomic.Int64
	add     time.Duration
}

func (x *timedIndex) Pending(ctx context.Context, e zset.Entry) (bool, error) {
	defer func(t time.Time) { x.pending.Add(int64(time.Since(t))) }(time.Now())
	return x.WatchIndex.Pending(ctx, e)
}

func (x *timedIndex) Add(ctx context.Context, now time.Time, es []zset.Entry) error {
	defer func(t time.Time) { x.add += time.Since(t) }(time.Now())
	return x.WatchIndex.Add(ctx, now, es)
}

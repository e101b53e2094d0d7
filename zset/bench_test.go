package zset

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/delayq/delayq/deploy/stacktest"
)

// Benchmarks of the Redis round trips against the local stack's Redis
// (skipped without it, like the integration tests). Figures belong in
// docs/performance.md, as ratios measured in one run.

func benchIndex(b *testing.B, cfg Config) *Index {
	b.Helper()
	c, prefix := stacktest.RedisPrefix(b, "dqbench-zset")
	cfg.Prefix = prefix
	ix, err := New(c, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return ix
}

// BenchmarkAdd adds batches of 1,000 entries as ingest does: "fresh" ids
// (the common case), and "again" the same batch a second time (a re-read
// input after a crash or a retried batch: every member is already there).
// Every iteration writes into a segment of its own, so zsets stay small
// (about 4 members of 256 shards), and deletes it untimed.
func BenchmarkAdd(b *testing.B) {
	ctx := context.Background()
	const size = 1000
	base := time.Now().Add(time.Hour).Truncate(time.Minute)
	batch := func(iter int) []Entry {
		es := make([]Entry, size)
		seg := base.Add(time.Duration(iter) * time.Minute).UnixMilli()
		for i := range es {
			es[i] = Entry{ID: uint64(1<<40+iter*size+i) << 12, ExecAt: seg + int64(i)*59}
		}
		return es
	}
	b.Run("fresh", func(b *testing.B) {
		ix := benchIndex(b, Config{})
		b.ReportAllocs()
		iter := 0
		for b.Loop() {
			es := batch(iter)
			if err := ix.Writer().Add(ctx, time.Now(), es); err != nil {
				b.Fatal(err)
			}
			iter++
			b.StopTimer()
			dropSegment(b, ix, es[0].ExecAt)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iter*size), "ns/entry")
	})
	b.Run("again", func(b *testing.B) {
		ix := benchIndex(b, Config{})
		es := batch(0)
		if err := ix.Writer().Add(ctx, time.Now(), es); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if err := ix.Writer().Add(ctx, time.Now(), es); err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*size), "ns/entry")
	})
}

// BenchmarkRemove removes what one Due call returned from one zset, as the
// scanner does: 100 members (a listpack) and 1,000 (a skiplist). Refilling
// the zset is not timed.
func BenchmarkRemove(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{100, 1000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			ix := benchIndex(b, Config{Shards: 1, Fill: 1 << 20}) // one zset
			at := time.Now().Add(time.Hour).UnixMilli()
			es := make([]Entry, size)
			for i := range es {
				es[i] = Entry{ID: uint64(1<<40+i) << 12, ExecAt: at + int64(i)}
			}
			key := ix.Key(es[0])
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if err := ix.Writer().Add(ctx, time.Now(), es); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := ix.Reader().Remove(ctx, key, es); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/entry")
		})
	}
}

// BenchmarkMemory reports the Redis bytes per indexed task (the sum of
// MEMORY USAGE over the zsets, registry excluded) for 100,000 tasks due in
// one minute over 2,048 shards, about 49 a zset, all listpacks. "reused"
// makes 1 % of them a second task of an id already in the same zset (another
// exec_at). Run with -benchtime=1x; each iteration measures afresh.
func BenchmarkMemory(b *testing.B) {
	ctx := context.Background()
	const n, shards = 100_000, 2048
	for _, tc := range []struct {
		name  string
		reuse int // every reuse-th entry repeats the previous id
	}{{"distinct", 0}, {"reused", 100}} {
		b.Run(tc.name, func(b *testing.B) {
			c, _ := stacktest.RedisPrefix(b, "dqbench-zset")
			at := time.Now().Add(time.Hour).Truncate(time.Minute).UnixMilli()
			es := make([]Entry, n)
			for i := range es {
				id := uint64(1<<40+i) << 12
				if tc.reuse > 0 && i%tc.reuse == tc.reuse-1 {
					id = es[i-1].ID
				}
				es[i] = Entry{ID: id, ExecAt: at + int64(i%60_000)}
			}
			var perTask float64
			run := 0
			for b.Loop() {
				prefix := fmt.Sprintf("dqbench-zset-mem-%d-%d", time.Now().UnixNano(), run)
				run++
				ix, err := New(c, Config{Prefix: prefix, Shards: shards})
				if err != nil {
					b.Fatal(err)
				}
				if err := ix.Writer().Add(ctx, time.Now(), es); err != nil {
					b.Fatal(err)
				}
				var bytes, members int64
				encodings := map[string]int{}
				for shard := range shards {
					key := ix.key(ix.segmentName(ix.segmentStart(at)), shard)
					bytes += c.MemoryUsage(ctx, key, 0).Val()
					members += c.ZCard(ctx, key).Val()
					encodings[c.ObjectEncoding(ctx, key).Val()]++
				}
				stacktest.DropKeys(b, c, prefix)
				if members != n {
					b.Fatalf("indexed %d members, want %d (encodings %v)", members, n, encodings)
				}
				perTask = float64(bytes) / n
				b.Logf("%s: %d bytes for %d tasks = %.2f B/task; encodings %v", tc.name, bytes, n, perTask, encodings)
			}
			b.ReportMetric(perTask, "B/task")
		})
	}
}

// BenchmarkAddDense adds batches of 1,000 entries into one segment that
// grows through its shard families (256 shards, fill 127: family f has
// 256*(f+1) zsets), as a burst or a busy minute does. "fresh": new ids,
// the segment restarting every 500,000 entries (about 8 families); "again
// first"/"again last": re-adding 1,000 tasks of a 500,000-task segment that
// sit in family 0 / in its last family, whose path crosses every sealed
// zset before it.
func BenchmarkAddDense(b *testing.B) {
	ctx := context.Background()
	const size, segment = 1000, 500_000
	at := time.Now().Add(time.Hour).Truncate(time.Minute).UnixMilli()
	entry := func(i int) Entry { return Entry{ID: uint64(1<<40+i) << 12, ExecAt: at + int64(i%60_000)} }
	fill := func(b *testing.B, ix *Index, from, n int) []Entry {
		es := make([]Entry, 0, n)
		for i := from; i < from+n; i++ {
			es = append(es, entry(i))
		}
		for c := range slices.Chunk(es, size) {
			if err := ix.Writer().Add(ctx, time.Now(), c); err != nil {
				b.Fatal(err)
			}
		}
		return es
	}
	b.Run("fresh", func(b *testing.B) {
		ix := benchIndex(b, Config{})
		b.ReportAllocs()
		next, n := 0, 0
		for b.Loop() {
			if next >= segment {
				b.StopTimer()
				dropSegment(b, ix, at)
				next = 0
				b.StartTimer()
			}
			fill(b, ix, n*size, size)
			next += size
			n++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*size), "ns/entry")
	})
	for _, tc := range []struct {
		name string
		from int
	}{{"again_first", 0}, {"again_last", segment - size}} {
		b.Run(tc.name, func(b *testing.B) {
			ix := benchIndex(b, Config{})
			es := fill(b, ix, 0, segment)
			fams, err := ix.families(ctx, []string{ix.segmentName(ix.segmentStart(at))})
			if err != nil {
				b.Fatal(err)
			}
			batch := es[tc.from : tc.from+size]
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := ix.Writer().Add(ctx, time.Now(), batch); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*size), "ns/entry")
			b.ReportMetric(float64(fams[0]), "families")
		})
	}
}

// dropSegment deletes the zsets of the segment holding at, every family.
func dropSegment(b *testing.B, ix *Index, at int64) {
	ctx := context.Background()
	name := ix.segmentName(ix.segmentStart(at))
	fams, err := ix.families(ctx, []string{name})
	if err != nil {
		b.Fatal(err)
	}
	pl := ix.client.Pipeline()
	for _, k := range ix.segmentKeys(name, fams[0]) {
		pl.Unlink(ctx, k)
	}
	pl.ZRem(ctx, ix.registry, name)
	pl.HDel(ctx, ix.familiesKey(), name)
	pl.HDel(ctx, ix.pendingKey(), name)
	if _, err := pl.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	// Forget the notes on it too: production never refills a dropped
	// segment (Add writes into current and future segments only).
	w := ix.Writer()
	w.mu.Lock()
	delete(w.grownSeg, ix.segmentStart(at))
	delete(w.sealedSeg, ix.segmentStart(at))
	w.mu.Unlock()
}

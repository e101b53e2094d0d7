package zset

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Writer indexes tasks (Add): the role of ingest, and of the scanner for
// the next occurrences of recurring tasks. It notes, for the segments it
// writes into, the family counts it knows recorded and the zsets it saw
// sealed, which spare it scripts and lookups; Index.Writer hands out one
// Writer per Index.
type Writer struct {
	*core

	mu        sync.Mutex
	grownSeg  map[int64]int               // segment start -> families known recorded
	sealedSeg map[int64]map[famShard]bool // segment start -> zsets seen sealed
}

// Add indexes entries: the registry ZADD of the segments touched and one
// placeScript per family-0 zset in one pipeline, then one pipeline per
// further shard family that the batch reaches (see the package doc, "Shard
// families"), then one HINCRBY of the pending counts per segment. An entry
// whose segment has already ended relative to now goes into the segment of
// now, keeping its score.
//
// Add refuses bad entries one by one (see ErrBadEntry) and indexes the
// others: it returns a *BadEntryError only once every other entry is
// indexed. Any other error is a Redis failure after which some entries may
// be indexed and some not; adding them all again is harmless.
func (ix *Writer) Add(ctx context.Context, now time.Time, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	p := ix.plan(now.UnixMilli(), entries)
	if len(p.segs) > 0 {
		if err := ix.add(ctx, p); err != nil {
			return fmt.Errorf("zset: add %d entries: %w", len(entries), err)
		}
	}
	if p.bad != nil {
		return p.bad
	}
	return nil
}

// plan is an Add batch grouped by segment.
type plan struct {
	segments []redis.Z // registry members: segment name, score start
	segs     []segPlan
	bad      *BadEntryError
}

// plan groups entries by target segment. Entries whose segment ended at or
// before nowMs go to the segment of nowMs. Bad entries are left out and
// listed in plan.bad.
func (ix *Writer) plan(nowMs int64, entries []Entry) plan {
	var p plan
	nowSeg := ix.segmentStart(nowMs)
	bySeg := make(map[int64]int, 2)
	for i, e := range entries {
		if why := e.check(); why != "" {
			if p.bad == nil {
				p.bad = &BadEntryError{}
			}
			p.bad.Indexes = append(p.bad.Indexes, i)
			p.bad.Reasons = append(p.bad.Reasons, why)
			continue
		}
		seg := ix.segmentStart(e.ExecAt)
		if seg+ix.segMs <= nowMs {
			seg = nowSeg
		}
		si, ok := bySeg[seg]
		if !ok {
			name := ix.segmentName(seg)
			si = len(p.segs)
			bySeg[seg] = si
			p.segs = append(p.segs, segPlan{start: seg, name: name})
			p.segments = append(p.segments, redis.Z{Score: float64(seg), Member: name})
		}
		p.segs[si].entries = append(p.segs[si].entries, e)
	}
	return p
}

func (ix *Writer) add(ctx context.Context, p plan) (err error) {
	defer ix.metrics.observe("add", time.Now(), &err)
	return ix.place(ctx, p.segs, p.segments)
}

// segPlan is the part of an Add batch in one segment.
type segPlan struct {
	start   int64
	name    string
	entries []Entry
}

// place indexes the entries of segs and counts what it added in the
// pending hash. One round trip sends the registry ZADD, raises the offered
// counts of the segments and reads their family counts (sparse). A segment
// with one family and few enough tasks takes its entries by plain ZADD NX, one per
// zset (fastAdd); the others, and the entries a ZADD NX did not add (a
// task added again, an id reused), walk their paths (walk).
func (ix *Writer) place(ctx context.Context, segs []segPlan, registry []redis.Z) error {
	sparse, err := ix.sparse(ctx, segs, registry)
	if err != nil {
		return err
	}
	added := make([]int64, len(segs))
	rest, err := ix.fastAdd(ctx, segs, sparse, added)
	if err != nil {
		return err
	}
	if err := ix.walk(ctx, rest, added); err != nil {
		return err
	}
	pl := ix.client.Pipeline()
	for si, s := range segs {
		if added[si] != 0 {
			pl.HIncrBy(ctx, ix.pendingKey(), s.name, added[si])
		}
	}
	if pl.Len() > 0 {
		if _, err := pl.Exec(ctx); err != nil {
			return fmt.Errorf("count pending: %w", err)
		}
	}
	return nil
}

// sparseShare is how full, on average, the zsets of a one-family segment
// may get (as a share of Fill) from plain ZADD NX writes. At 0.6 (76 of
// 127) a zset of a uniformly hashed segment passes 128 members about once
// in a billion; one that does (skewed ids) becomes a skiplist but nothing
// else goes wrong, and the first walk that meets it seals it.
const sparseShare = 0.6

// sparse sends the registry ZADD, raises the offered count of each of segs
// by its entries and reads the family counts in one round trip, and
// reports which segments are sparse: one family, and an offered count of
// at most sparseShare*Fill tasks a zset once the batch is in. The offered
// count includes every concurrent Add's batch (HINCRBY returns the sum of
// all of them), so Adds running side by side, in any process, cannot
// together write more than that by ZADD NX; a count of members added,
// read before writing, would not see the batches in flight. Families are
// recorded before anything is written past family 0, so a plain ZADD NX
// never puts a task beside a copy of it in a later family.
func (ix *Writer) sparse(ctx context.Context, segs []segPlan, registry []redis.Z) ([]bool, error) {
	pl := ix.client.Pipeline()
	for c := range slices.Chunk(registry, MaxArgs/2) {
		pl.ZAdd(ctx, ix.registry, c...)
	}
	names := make([]string, len(segs))
	offered := make([]*redis.IntCmd, len(segs))
	for i, s := range segs {
		names[i] = s.name
		offered[i] = pl.HIncrBy(ctx, ix.offeredKey(), s.name, int64(len(s.entries)))
	}
	var fams []*redis.SliceCmd
	for c := range slices.Chunk(names, MaxArgs) {
		fams = append(fams, pl.HMGet(ctx, ix.familiesKey(), c...))
	}
	if _, err := pl.Exec(ctx); err != nil {
		return nil, fmt.Errorf("register segments: %w", err)
	}
	limit := int64(sparseShare * float64(ix.shards*ix.fill))
	out := make([]bool, len(segs))
	for i := range segs {
		out[i] = fams[i/MaxArgs].Val()[i%MaxArgs] == nil && offered[i].Val() <= limit
	}
	return out, nil
}

// fastAdd adds the entries of the sparse segments by plain ZADD NX, one
// per zset, pipelined, and counts what it added in added. It returns the
// segments left to walk: the segments not sparse, and in the sparse ones
// the entries of every zset where ZADD NX added fewer members than it was
// given (the walk finds those already there and places reused ids).
func (ix *Writer) fastAdd(ctx context.Context, segs []segPlan, sparse []bool, added []int64) ([]segPlan, error) {
	type zadd struct {
		seg     int
		key     string
		entries []Entry
		cmd     *redis.IntCmd
	}
	rest := make([]segPlan, len(segs))
	var sent []*zadd
	for si, s := range segs {
		if !sparse[si] {
			rest[si] = s
			continue
		}
		rest[si] = segPlan{start: s.start, name: s.name}
		order, byShard := groupBy(s.entries, func(e Entry) int { return ix.shard(e.ID) })
		for _, sh := range order {
			for c := range slices.Chunk(byShard[sh], (MaxArgs-1)/2) {
				sent = append(sent, &zadd{seg: si, key: ix.key(s.name, sh), entries: c})
			}
		}
	}
	for c := range slices.Chunk(sent, MaxPipeline) {
		pl := ix.client.Pipeline()
		for _, z := range c {
			members := make([]redis.Z, len(z.entries))
			for i, e := range z.entries {
				members[i] = redis.Z{Score: float64(ix.score(segs[z.seg].start, e.ExecAt)), Member: e.ID}
			}
			z.cmd = pl.ZAddNX(ctx, z.key, members...)
		}
		if _, err := pl.Exec(ctx); err != nil {
			return nil, fmt.Errorf("zadd: %w", err)
		}
		for _, z := range c {
			n := z.cmd.Val()
			added[z.seg] += n
			if n < int64(len(z.entries)) {
				rest[z.seg].entries = append(rest[z.seg].entries, z.entries...)
			}
		}
	}
	return rest, nil
}

// groupBy groups items by key; keys lists the keys in first-seen order.
func groupBy[T any, K comparable](items []T, key func(T) K) (keys []K, groups map[K][]T) {
	groups = make(map[K][]T)
	for _, it := range items {
		k := key(it)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], it)
	}
	return keys, groups
}

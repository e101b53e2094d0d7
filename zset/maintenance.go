package zset

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Maintenance keeps the segments and answers about them: Retire (the
// dispatcher), Backlog (the dispatcher's metrics, the console, delayctl)
// and Pending (the console, delayctl inspect and backfill).
type Maintenance struct{ *core }

// SegmentCount is one registered segment and how many members its shards
// hold.
type SegmentCount struct {
	Segment string // as in the key, e.g. "202501311459"
	Start   int64  // unix ms, inclusive
	End     int64  // unix ms, exclusive
	Pending int64
}

// Retire removes from the registry the segments that ended at or before
// `before` (unix ms) and whose zsets hold no task, and returns how many it
// removed. It unlinks their zsets (sealed ones keep their seal member) and
// drops their family, pending and offered counts. Pass a time well behind
// now (the dispatcher's grace): Add never writes into an ended segment, so
// an empty ended segment stays empty.
func (ix *Maintenance) Retire(ctx context.Context, before int64) (n int, err error) {
	defer ix.metrics.observe("retire", time.Now(), &err)
	keys, segs, err := ix.keysOf(ctx, "-inf", strconv.FormatInt(before-ix.segMs, 10))
	if err != nil {
		return 0, fmt.Errorf("zset: retire: %w", err)
	}
	if len(segs) == 0 {
		return 0, nil
	}
	counts, err := ix.counts(ctx, keys, func(pl redis.Pipeliner, key string) *redis.IntCmd {
		return pl.ZCount(ctx, key, "-inf", strconv.FormatInt(maxExecAt, 10))
	})
	if err != nil {
		return 0, fmt.Errorf("zset: retire: %w", err)
	}
	var empty []any
	var fields []string
	b := ix.newBatch()
	lo := 0
	for _, s := range segs {
		var sum int64
		for _, c := range counts[lo:s.end] {
			sum += c
		}
		if sum == 0 {
			empty = append(empty, s.name)
			fields = append(fields, s.name)
			for _, k := range keys[lo:s.end] {
				b.add(ctx, func(pl redis.Pipeliner) { pl.Unlink(ctx, k) })
			}
		}
		lo = s.end
	}
	if len(empty) == 0 {
		return 0, nil
	}
	// Keys first: a Retire cut short leaves the segment registered, and the
	// next one finishes it.
	if err := b.flush(ctx); err != nil {
		return 0, fmt.Errorf("zset: retire %d segments: %w", len(empty), err)
	}
	b = ix.newBatch()
	for c := range slices.Chunk(fields, MaxArgs) {
		b.add(ctx, func(pl redis.Pipeliner) {
			pl.HDel(ctx, ix.familiesKey(), c...)
			pl.HDel(ctx, ix.pendingKey(), c...)
			pl.HDel(ctx, ix.offeredKey(), c...)
		})
	}
	for c := range slices.Chunk(empty, MaxArgs) {
		b.add(ctx, func(pl redis.Pipeliner) { pl.ZRem(ctx, ix.registry, c...) })
	}
	if err := b.flush(ctx); err != nil {
		return 0, fmt.Errorf("zset: retire %d segments: %w", len(empty), err)
	}
	return len(empty), nil
}

// Backlog returns every registered segment with its pending count, ordered
// by start. The counts come from the pending hash that Add and Remove keep
// (members added minus members removed), so it costs one ZRANGE of the
// registry and one HMGET per MaxArgs segments, not one command per zset. A
// process that dies between writing members and counting them leaves a
// segment's count off by that batch until the segment retires. A segment
// without a count (written by a delayq from before the counts) is counted
// zset by zset; one that got counts only after the upgrade (new tasks, or
// removals, which may take it below zero: read as 0) reports those alone
// until it retires.
func (ix *Maintenance) Backlog(ctx context.Context) (out []SegmentCount, err error) {
	defer ix.metrics.observe("backlog", time.Now(), &err)
	segs, err := ix.segments(ctx, "-inf", "+inf")
	if err != nil {
		return nil, fmt.Errorf("zset: backlog: %w", err)
	}
	out = make([]SegmentCount, len(segs))
	names := make([]string, len(segs))
	for i, s := range segs {
		start := int64(s.Score)
		names[i] = s.Member.(string)
		out[i] = SegmentCount{Segment: names[i], Start: start, End: start + ix.segMs}
	}
	var uncounted []int // segments without a count: written before counts
	for lo := 0; lo < len(names); lo += MaxArgs {
		vals, err := ix.client.HMGet(ctx, ix.pendingKey(), names[lo:min(lo+MaxArgs, len(names))]...).Result()
		if err != nil {
			return nil, fmt.Errorf("zset: backlog: %w", err)
		}
		for i, v := range vals {
			s, ok := v.(string)
			if !ok {
				uncounted = append(uncounted, lo+i)
				continue
			}
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
				out[lo+i].Pending = n
			}
		}
	}
	if len(uncounted) > 0 {
		if err := ix.countUncounted(ctx, out, uncounted); err != nil {
			return nil, fmt.Errorf("zset: backlog: %w", err)
		}
	}
	return out, nil
}

// countUncounted sets the Pending of out[i] for each i in idx by counting
// the tasks in every zset of the segment: the segments that an index
// without pending counts wrote (family 0 only) have no field, so Backlog
// stays right across an upgrade, at the old cost for those segments only.
func (ix *Maintenance) countUncounted(ctx context.Context, out []SegmentCount, idx []int) error {
	names := make([]string, len(idx))
	for j, i := range idx {
		names[j] = out[i].Segment
	}
	fams, err := ix.families(ctx, names)
	if err != nil {
		return err
	}
	var keys []string
	ends := make([]int, len(idx))
	for j, name := range names {
		keys = append(keys, ix.segmentKeys(name, fams[j])...)
		ends[j] = len(keys)
	}
	counts, err := ix.counts(ctx, keys, func(pl redis.Pipeliner, key string) *redis.IntCmd {
		return pl.ZCount(ctx, key, "-inf", strconv.FormatInt(maxExecAt, 10))
	})
	if err != nil {
		return err
	}
	lo := 0
	for j, i := range idx {
		for _, n := range counts[lo:ends[j]] {
			out[i].Pending += n
		}
		lo = ends[j]
	}
	return nil
}

// Pending reports whether e is still indexed: a zset on its path (its shard
// of every family in use) in its own segment, or in a later registered
// segment that had started by now (where Add puts overdue entries), holds
// the member "<ID>" with score e.ExecAt or the member "<ID>@<ExecAt>".
func (ix *Maintenance) Pending(ctx context.Context, e Entry) (ok bool, err error) {
	defer ix.metrics.observe("pending", time.Now(), &err)
	own := ix.segmentStart(e.ExecAt)
	// Slack of one segment for clock skew between this process and ingest.
	upto := max(own, ix.segmentStart(time.Now().UnixMilli())+ix.segMs)
	segs, err := ix.segments(ctx, strconv.FormatInt(own, 10), strconv.FormatInt(upto, 10))
	if err != nil {
		return false, fmt.Errorf("zset: pending %d: %w", e.ID, err)
	}
	names, starts := []string{ix.segmentName(own)}, []int64{own}
	for _, s := range segs {
		if name := s.Member.(string); name != names[0] {
			names, starts = append(names, name), append(starts, int64(s.Score))
		}
	}
	fams, err := ix.families(ctx, names)
	if err != nil {
		return false, fmt.Errorf("zset: pending %d: %w", e.ID, err)
	}
	type look struct {
		key   string
		score int64 // e's score in key
	}
	var looks []look
	for i, name := range names {
		for f := range fams[i] {
			looks = append(looks, look{ix.familyKey(name, f, ix.familyShard(e.ID, f)), ix.score(starts[i], e.ExecAt)})
		}
	}
	plain := strconv.FormatUint(e.ID, 10)
	for c := range slices.Chunk(looks, MaxPipeline) {
		pl := ix.client.Pipeline()
		cmds := make([]*redis.FloatSliceCmd, len(c))
		for i, l := range c {
			cmds[i] = pl.ZMScore(ctx, l.key, plain, plain+"@"+strconv.FormatInt(l.score, 10))
		}
		if _, err := pl.Exec(ctx); err != nil {
			return false, fmt.Errorf("zset: pending %d: %w", e.ID, err)
		}
		for i, cmd := range cmds {
			// ZMSCORE reads a missing member as 0, never a valid score.
			if s := cmd.Val(); int64(s[0]) == c[i].score || s[1] != 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

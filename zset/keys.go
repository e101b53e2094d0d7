package zset

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// MaxFamilies caps the shard families of one segment. Family f has
	// Shards*(f+1) zsets; the last family never seals, so a segment holds
	// any number of tasks (past Shards*528*Fill they are skiplists).
	MaxFamilies = 32
	// DefaultFill is the Config.Fill default: a zset seals once it holds
	// 127 members, so with its seal member it stays within Redis's default
	// zset-max-listpack-entries (128).
	DefaultFill = 127

	sealMember = "~" // score +inf: never due, never a task
)

// The key layout below is shared by every role (see Index): the keys of a
// segment's zsets, of the registry and of the hashes beside it.

// Registry returns the key of the segment registry.
func (ix *core) Registry() string { return ix.registry }

// Key returns the zset key of e's own segment. Add may have put e into a
// later segment (see the package doc); Pending looks in both.
func (ix *core) Key(e Entry) string {
	return ix.key(ix.segmentName(ix.segmentStart(e.ExecAt)), ix.shard(e.ID))
}

func (ix *core) segmentStart(ms int64) int64 {
	s := ms - ms%ix.segMs
	if ms < 0 && ms%ix.segMs != 0 {
		s -= ix.segMs
	}
	return s
}

// score is the score of exec_at in a zset of the segment that starts at
// start (layout version 2): its offset from the middle of the segment,
// plus one from the middle on, so that no score is 0 (ZMSCORE reads a
// missing member as 0). A one-minute segment's own tasks score within
// ±30,000, which a listpack stores in 2 bytes, where an exec_at takes 8.
// It is increasing in exec_at, so a range of due times is a range of
// scores. Under layout version 1 the score is exec_at itself.
func (ix *core) score(start, execAt int64) int64 {
	if ix.absolute.Load() {
		return execAt
	}
	off := execAt - (start + ix.segMs/2)
	if off >= 0 {
		off++
	}
	return off
}

// execAt is the exec_at of score in a zset of the segment starting at
// start (the inverse of score).
func (ix *core) execAt(start, score int64) int64 {
	if ix.absolute.Load() {
		return score
	}
	if score > 0 {
		score--
	}
	return start + ix.segMs/2 + score
}

// keyStart returns the start of the segment of a zset key of this index.
func (ix *core) keyStart(key string) (int64, error) {
	t, err := time.ParseInLocation(ix.layout, ix.segmentOf(key), time.UTC)
	if err != nil {
		return 0, fmt.Errorf("zset: %s is not a zset of prefix %s", key, ix.prefix)
	}
	return t.UnixMilli(), nil
}

func (ix *core) segmentName(start int64) string {
	return time.UnixMilli(start).UTC().Format(ix.layout)
}

func (ix *core) key(segment string, shard int) string {
	return ix.familyKey(segment, 0, shard)
}

func (ix *core) shard(id uint64) int {
	return int(mix64(id) % uint64(ix.shards))
}

// mix64 is the murmur3 64-bit finalizer: every input bit affects every
// output bit, so structured ids spread evenly over shards.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// familyShards returns the number of zsets of family f.
func (ix *core) familyShards(f int) int { return ix.shards * (f + 1) }

// familyShard returns the shard of id in family f.
func (ix *core) familyShard(id uint64, f int) int {
	return int(mix64(id) % uint64(ix.familyShards(f)))
}

// familyKey returns the key of shard `shard` of family f of segment:
// {prefix}:{segment}:{shard} for family 0 (the layout of before families),
// {prefix}:{segment}:{f}.{shard} after.
func (ix *core) familyKey(segment string, f, shard int) string {
	var b strings.Builder
	b.Grow(len(ix.prefix) + len(segment) + 12)
	b.WriteString(ix.prefix)
	b.WriteByte(':')
	b.WriteString(segment)
	b.WriteByte(':')
	if f > 0 {
		b.WriteString(strconv.Itoa(f))
		b.WriteByte('.')
	}
	b.WriteString(strconv.Itoa(shard))
	return b.String()
}

// segmentKeys returns every key of the first n families of segment.
func (ix *core) segmentKeys(segment string, n int) []string {
	keys := make([]string, 0, ix.shards*n*(n+1)/2)
	for f := range n {
		for shard := range ix.familyShards(f) {
			keys = append(keys, ix.familyKey(segment, f, shard))
		}
	}
	return keys
}

// familiesKey is the hash of segments with more than one family: field =
// segment, value = families in use. A segment without a field has one.
func (ix *core) familiesKey() string { return ix.prefix + ":families" }

// pendingKey is the hash of pending counts: field = segment, value =
// members added minus members removed (Add and Remove keep it).
func (ix *core) pendingKey() string { return ix.prefix + ":pending" }

// offeredKey is the hash of offered counts: field = segment, value = the
// tasks every Add so far has been given for the segment, raised before
// anything is written and never lowered (removals, tasks already there
// and retried Adds leave it at or above what the segment ever held), so
// it bounds what concurrent plain ZADD NX writers can put in a segment.
func (ix *core) offeredKey() string { return ix.prefix + ":offered" }

// families returns the families in use of each segment (1 without a field).
func (ix *core) families(ctx context.Context, names []string) ([]int, error) {
	out := make([]int, len(names))
	for i := range out {
		out[i] = 1
	}
	for lo := 0; lo < len(names); lo += MaxArgs {
		c := names[lo:min(lo+MaxArgs, len(names))]
		vals, err := ix.client.HMGet(ctx, ix.familiesKey(), c...).Result()
		if err != nil {
			return nil, fmt.Errorf("read families %s: %w", ix.familiesKey(), err)
		}
		for i, v := range vals {
			s, _ := v.(string)
			if n, err := strconv.Atoi(s); err == nil && n > 1 {
				out[lo+i] = min(n, MaxFamilies)
			}
		}
	}
	return out, nil
}

// segments returns registered segments with lo <= start <= hi.
func (ix *core) segments(ctx context.Context, lo, hi string) ([]redis.Z, error) {
	segs, err := ix.client.ZRangeByScoreWithScores(ctx, ix.registry, &redis.ZRangeBy{Min: lo, Max: hi}).Result()
	if err != nil {
		return nil, fmt.Errorf("read registry %s: %w", ix.registry, err)
	}
	return segs, nil
}

// keysOf returns the registered segments with lo <= start <= hi and the
// keys of every family in use of each, in order; ends[i] is the end (in
// keys) of segment i.
func (ix *core) keysOf(ctx context.Context, lo, hi string) (keys []string, segs []segKeys, err error) {
	zs, err := ix.segments(ctx, lo, hi)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(zs))
	for i, z := range zs {
		names[i] = z.Member.(string)
	}
	fams, err := ix.families(ctx, names)
	if err != nil {
		return nil, nil, err
	}
	segs = make([]segKeys, len(zs))
	for i, z := range zs {
		keys = append(keys, ix.segmentKeys(names[i], fams[i])...)
		segs[i] = segKeys{name: names[i], start: int64(z.Score), families: fams[i], end: len(keys)}
	}
	return keys, segs, nil
}

// segKeys is one segment of a keysOf answer.
type segKeys struct {
	name     string
	start    int64
	families int
	end      int // end of its keys in the key list
}

// segmentOf returns the segment part of a zset key of this index, or "".
func (ix *core) segmentOf(key string) string {
	rest, ok := strings.CutPrefix(key, ix.prefix+":")
	if !ok {
		return ""
	}
	seg, _, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	return seg
}

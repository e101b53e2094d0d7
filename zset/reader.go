package zset

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reader reads the due entries and removes the settled ones: the role of
// the dispatcher (DueGroups) and the scanner (DueMany, RemoveMany).
type Reader struct{ *core }

// DueKeys returns the keys of the zsets, in registered segments that start
// at or before until, that hold members with score <= until, ordered by
// segment, family and shard. It reads the family count of those segments
// and issues one ZCOUNT per zset of every family in use.
func (ix *Reader) DueKeys(ctx context.Context, until int64) ([]string, error) {
	groups, err := ix.DueGroups(ctx, until)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, g := range groups {
		keys = append(keys, g.Due...)
	}
	return keys, nil
}

// Group is the due zsets of one scan group: the zsets of a segment whose
// shard is the same modulo Shards. They are the zsets on the paths of the
// ids of one family-0 shard (familyShard(id, f) mod Shards = shard(id)), so
// a zset is in the same group whatever the family count when it is listed.
type Group struct {
	// Head is the group's family-0 zset, due or not: the name of the group
	// (the scan task's Kafka key).
	Head string
	// Due is the zsets of the group holding members due by the until asked
	// for, family by family (Head first when it is one of them).
	Due []string
}

// DueGroups returns the zsets DueKeys returns, in groups (segment by
// segment, shard by shard), leaving out the groups with nothing due.
func (ix *Reader) DueGroups(ctx context.Context, until int64) (groups []Group, err error) {
	defer ix.metrics.observe("due_keys", time.Now(), &err)
	all, segs, err := ix.keysOf(ctx, "-inf", strconv.FormatInt(until, 10))
	if err != nil {
		return nil, fmt.Errorf("zset: due keys: %w", err)
	}
	hi := make(map[string]string, len(segs)) // segment -> the score of until in it
	for _, s := range segs {
		hi[s.name] = strconv.FormatInt(ix.score(s.start, until), 10)
	}
	counts, err := ix.counts(ctx, all, func(pl redis.Pipeliner, key string) *redis.IntCmd {
		return pl.ZCount(ctx, key, "-inf", hi[ix.segmentOf(key)])
	})
	if err != nil {
		return nil, fmt.Errorf("zset: due keys: %w", err)
	}
	lo := 0
	for _, s := range segs {
		due := make([][]string, ix.shards) // by group, in key order: family by family
		i := lo
		for f := range s.families {
			for shard := range ix.familyShards(f) {
				if counts[i] > 0 {
					due[shard%ix.shards] = append(due[shard%ix.shards], all[i])
				}
				i++
			}
		}
		for g, keys := range due {
			if len(keys) > 0 {
				groups = append(groups, Group{Head: ix.key(s.name, g), Due: keys})
			}
		}
		lo = s.end
	}
	return groups, nil
}

// Due returns up to limit entries of key with score <= until, lowest score
// first (ZRANGEBYSCORE key -inf until LIMIT 0 limit WITHSCORES), reading
// both member forms. limit <= 0 means DefaultDueLimit; it is capped at
// MaxArgs. Fewer than limit entries means nothing more was due. A member in
// neither form is ErrBadMember.
func (ix *Reader) Due(ctx context.Context, key string, until int64, limit int) ([]Entry, error) {
	out, err := ix.DueMany(ctx, []Range{{Key: key, Until: until}}, limit)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// Range asks DueMany for the entries of the zset Key with score <= Until.
type Range struct {
	Key   string
	Until int64 // unix ms, inclusive
}

// DueMany is Due for each of rs (the answer aligned with rs), in one
// pipelined round trip; a zset holding both forms of a task may take one
// more. A key that is not a zset of this index (another prefix's, left in
// the scan-task topic by an earlier deployment) holds nothing due.
func (ix *Reader) DueMany(ctx context.Context, rs []Range, limit int) (out [][]Entry, err error) {
	defer ix.metrics.observe("due", time.Now(), &err)
	if limit <= 0 {
		limit = DefaultDueLimit
	}
	limit = min(limit, MaxArgs)
	out = make([][]Entry, len(rs))
	read := make([]int, len(rs))
	todo := make([]int, 0, len(rs))
	starts := make([]int64, len(rs))
	for i := range rs {
		start, err := ix.keyStart(rs[i].Key)
		if err != nil {
			continue // not a zset of this index (a scan task of another prefix): nothing due
		}
		read[i], starts[i] = limit, start
		todo = append(todo, i)
	}
	for len(todo) > 0 {
		var again []int
		for c := range slices.Chunk(todo, MaxPipeline) {
			pl := ix.client.Pipeline()
			cmds := make([]*redis.ZSliceCmd, len(c))
			for j, i := range c {
				cmds[j] = pl.ZRangeByScoreWithScores(ctx, rs[i].Key, &redis.ZRangeBy{
					Min: "-inf", Max: strconv.FormatInt(ix.score(starts[i], rs[i].Until), 10), Count: int64(read[i]),
				})
			}
			_, _ = pl.Exec(ctx) // every command carries its own error
			for j, i := range c {
				zs, err := cmds[j].Result()
				if err != nil {
					return nil, fmt.Errorf("zset: due %s: %w", rs[i].Key, err)
				}
				entries, both, err := ix.parseDue(rs[i].Key, starts[i], zs)
				if err != nil {
					return nil, err
				}
				// Both forms of one task read as one entry: read that many
				// more, so that a short answer still means nothing more is
				// due.
				if both && len(zs) == read[i] && len(entries) < limit && read[i] < 2*MaxArgs {
					read[i] += limit - len(entries)
					again = append(again, i)
					continue
				}
				out[i] = entries[:min(len(entries), limit)]
			}
		}
		todo = again
	}
	return out, nil
}

// Earliest returns the lowest exec_at in [from, until] of the tasks still
// in the index (not settled by a scanner), and false when there is none. It reads
// the zsets of the segments starting from from's segment to until (an
// entry lives in its own segment or a later one), one ZRANGEBYSCORE
// LIMIT 0 1 each, in pipelines.
func (ix *Reader) Earliest(ctx context.Context, from, until int64) (_ int64, _ bool, err error) {
	defer ix.metrics.observe("earliest", time.Now(), &err)
	keys, segs, err := ix.keysOf(ctx, strconv.FormatInt(ix.segmentStart(from), 10), strconv.FormatInt(until, 10))
	if err != nil {
		return 0, false, fmt.Errorf("zset: earliest: %w", err)
	}
	starts := make([]int64, 0, len(keys)) // the segment start of each key
	for _, s := range segs {
		for len(starts) < s.end {
			starts = append(starts, s.start)
		}
	}
	var (
		low   int64
		found bool
	)
	for lo := 0; lo < len(keys); lo += MaxPipeline {
		pl := ix.client.Pipeline()
		cmds := make([]*redis.ZSliceCmd, 0, MaxPipeline)
		for i := lo; i < min(lo+MaxPipeline, len(keys)); i++ {
			cmds = append(cmds, pl.ZRangeByScoreWithScores(ctx, keys[i], &redis.ZRangeBy{
				Min:   strconv.FormatInt(ix.score(starts[i], from), 10),
				Max:   strconv.FormatInt(ix.score(starts[i], until), 10),
				Count: 1,
			}))
		}
		if _, err := pl.Exec(ctx); err != nil {
			return 0, false, fmt.Errorf("zset: earliest: %w", err)
		}
		for j, cmd := range cmds {
			for _, z := range cmd.Val() {
				if at := ix.execAt(starts[lo+j], int64(z.Score)); !found || at < low {
					low, found = at, true
				}
			}
		}
	}
	return low, found, nil
}

// parseDue reads the members of a Due answer of key, a zset of the
// segment starting at start, one entry per task; both reports a member of
// the "<id>@<score>" form.
func (ix *core) parseDue(key string, start int64, zs []redis.Z) (entries []Entry, both bool, err error) {
	entries = make([]Entry, 0, len(zs))
	for _, z := range zs {
		m, _ := z.Member.(string)
		e, long, ok := parseMember(m, z.Score)
		if !ok {
			return nil, false, fmt.Errorf("%w: %s holds %q (score %v)", ErrBadMember, key, m, z.Score)
		}
		e.ExecAt = ix.execAt(start, e.ExecAt)
		both = both || long
		entries = append(entries, e)
	}
	if both {
		entries = dedupe(entries)
	}
	return entries, both, nil
}

// parseMember reads a member "<id>" or "<id>@<score>" (long reports that
// form; its score must be the one it names) and returns its id and score
// (as ExecAt: the caller turns it into the exec_at).
func parseMember(m string, score float64) (e Entry, long, ok bool) {
	id, at, long := strings.Cut(m, "@")
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return Entry{}, long, false
	}
	e = Entry{ID: n, ExecAt: int64(score)}
	if long {
		t, err := strconv.ParseInt(at, 10, 64)
		if err != nil || t != e.ExecAt || float64(t) != score {
			return Entry{}, long, false
		}
	}
	return e, long, true
}

// dedupe drops repeated entries, keeping the first of each. Both forms of
// one task can rarely be in a zset at once (see the package doc).
func dedupe(entries []Entry) []Entry {
	seen := make(map[Entry]bool, len(entries))
	return slices.DeleteFunc(entries, func(e Entry) bool {
		if seen[e] {
			return true
		}
		seen[e] = true
		return false
	})
}

// removeScript removes the tasks (score, id) in ARGV from the zset
// KEYS[1]: the plain id member when its score is that one, and the member
// "<id>@<score>" if there is one. It returns how many members it
// removed. It unpacks at most len(ARGV) values, so callers keep ARGV under
// MaxArgs.
var removeScript = redis.NewScript(`
local key = KEYS[1]
local ids = {}
for i = 2, #ARGV, 2 do
	ids[#ids + 1] = ARGV[i]
end
local scores = redis.call('ZMSCORE', key, unpack(ids))
local gone = {}
for j = 1, #ids do
	local at = ARGV[2 * j - 1]
	if scores[j] and tonumber(scores[j]) == tonumber(at) then
		gone[#gone + 1] = ids[j]
	end
	gone[#gone + 1] = ids[j] .. '@' .. at
end
return redis.call('ZREM', key, unpack(gone))
`)

// Remove deletes the given tasks from key, score-checked: for each entry the
// member "<ID>" only if its score is ExecAt, and the member
// "<ID>@<ExecAt>". Another task reusing the ID stays. It runs one script per
// MaxArgs/2 entries, then lowers the pending count of the key's segment by
// the members it removed.
func (ix *Reader) Remove(ctx context.Context, key string, entries []Entry) error {
	return ix.RemoveMany(ctx, []Removal{{Key: key, Entries: entries}})
}

// Removal is what RemoveMany removes from one zset.
type Removal struct {
	Key     string
	Entries []Entry
}

// RemoveMany is Remove for each of rs, in one pipelined round trip of
// scripts and one of pending counts.
func (ix *Reader) RemoveMany(ctx context.Context, rs []Removal) error {
	_, err := ix.removeMany(ctx, removeScript, rs)
	return err
}

// removeMany is RemoveMany with script (removeScript, or Forget's
// forgetScript, which take the same arguments and return how many members
// they removed); it also returns that count.
func (ix *core) removeMany(ctx context.Context, script *redis.Script, rs []Removal) (gone int64, err error) {
	var (
		calls []scriptCall
		segs  []string // segment per call
		n     int
	)
	for _, r := range rs {
		n += len(r.Entries)
		start, err := ix.keyStart(r.Key)
		if err != nil {
			return 0, err
		}
		for c := range slices.Chunk(r.Entries, MaxArgs/2) {
			args := make([]any, 0, 2*len(c))
			for _, e := range c {
				args = append(args, ix.score(start, e.ExecAt), e.ID)
			}
			calls = append(calls, scriptCall{key: r.Key, args: args})
			segs = append(segs, ix.segmentOf(r.Key))
		}
	}
	if len(calls) == 0 {
		return 0, nil
	}
	defer ix.metrics.observe("remove", time.Now(), &err)
	removed := make(map[string]int64)
	for lo := 0; lo < len(calls); lo += MaxPipeline {
		hi := min(lo+MaxPipeline, len(calls))
		res, err := ix.runAllResults(ctx, script, calls[lo:hi])
		if err != nil {
			return 0, fmt.Errorf("zset: remove %d entries from %d zsets (%s...): %w", n, len(rs), rs[0].Key, err)
		}
		for i, r := range res {
			if k, _ := r.(int64); k > 0 && segs[lo+i] != "" {
				removed[segs[lo+i]] += k
				gone += k
			}
		}
	}
	if len(removed) == 0 {
		return 0, nil
	}
	pl := ix.client.Pipeline()
	for seg, k := range removed {
		pl.HIncrBy(ctx, ix.pendingKey(), seg, -k)
	}
	if _, err := pl.Exec(ctx); err != nil {
		return gone, fmt.Errorf("zset: count %d removed from %d segments: %w", n, len(removed), err)
	}
	return gone, nil
}

package zset

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

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

// familyShards returns the number of zsets of family f.
func (ix *Index) familyShards(f int) int { return ix.shards * (f + 1) }

// familyShard returns the shard of id in family f.
func (ix *Index) familyShard(id uint64, f int) int {
	return int(mix64(id) % uint64(ix.familyShards(f)))
}

// familyKey returns the key of shard `shard` of family f of segment:
// {prefix}:{segment}:{shard} for family 0 (the layout of before families),
// {prefix}:{segment}:{f}.{shard} after.
func (ix *Index) familyKey(segment string, f, shard int) string {
	if f == 0 {
		return ix.key(segment, shard)
	}
	var b strings.Builder
	b.Grow(len(ix.prefix) + len(segment) + 12)
	b.WriteString(ix.prefix)
	b.WriteByte(':')
	b.WriteString(segment)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(f))
	b.WriteByte('.')
	b.WriteString(strconv.Itoa(shard))
	return b.String()
}

// segmentKeys returns every key of the first n families of segment.
func (ix *Index) segmentKeys(segment string, n int) []string {
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
func (ix *Index) familiesKey() string { return ix.prefix + ":families" }

// pendingKey is the hash of pending counts: field = segment, value =
// members added minus members removed (Add and Remove keep it).
func (ix *Index) pendingKey() string { return ix.prefix + ":pending" }

// families returns the families in use of each segment (1 without a field).
func (ix *Index) families(ctx context.Context, names []string) ([]int, error) {
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

// growScript raises the family count of segment ARGV[1] in the hash KEYS[1]
// to ARGV[2] unless it is already that high.
var growScript = redis.NewScript(`
local n = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '1')
if n < tonumber(ARGV[2]) then
	redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return 0
`)

// placeScript places the tasks (exec_at, id) of ARGV[3..] in the zset
// KEYS[1], a shard of one family, and returns {added, not placed...}: the
// members it added and the 1-based positions of the tasks the caller must
// take to the next family. A task already there (plain id with its score,
// or "<id>@<exec_at>") is left as it is, and so is a task repeated in the
// call. A zset that is sealed (holds sealMember) takes no new task; an open
// zset takes tasks until it holds ARGV[1] members, then seals. ARGV[2] =
// "1" marks the last family, which never seals.
//
// Whatever the number of tasks it issues a fixed number of commands: one
// ZMSCORE of the seal and the plain ids, a second one of the "<id>@<exec_at>"
// forms only when an id is held at another time, one ZCARD, one ZADD.
var placeScript = redis.NewScript(`
local key = KEYS[1]
local fill = tonumber(ARGV[1])
local last = ARGV[2] == '1'
local names = {'` + sealMember + `'}
for i = 4, #ARGV, 2 do
	names[#names + 1] = ARGV[i]
end
local sc = redis.call('ZMSCORE', key, unpack(names))
local sealed = sc[1] ~= false
local plain = {}
for j = 2, #names do
	if sc[j] then
		plain[names[j]] = tonumber(sc[j])
	end
end
local members = {}
local long = {}
for i = 3, #ARGV, 2 do
	local at, id = ARGV[i], ARGV[i + 1]
	local held = plain[id]
	if held == nil then
		plain[id] = tonumber(at)
		members[#members + 1] = id
	elseif held == tonumber(at) then
		members[#members + 1] = false
	else
		local m = id .. '@' .. at
		members[#members + 1] = m
		long[#long + 1] = m
	end
end
local have = {}
if #long > 0 then
	local ls = redis.call('ZMSCORE', key, unpack(long))
	for j = 1, #long do
		if ls[j] then
			have[long[j]] = true
		end
	end
end
local room = 0
if not sealed then
	room = fill - redis.call('ZCARD', key)
end
local add = {}
local out = {0}
for k = 1, #members do
	local m = members[k]
	if m and not have[m] then
		have[m] = true
		if last or room > 0 then
			add[#add + 1] = ARGV[2 * k + 1]
			add[#add + 1] = m
			room = room - 1
		else
			out[#out + 1] = k
		end
	end
end
if #add > 0 then
	redis.call('ZADD', key, unpack(add))
end
if #out > 1 and not sealed then
	redis.call('ZADD', key, '+inf', '` + sealMember + `')
end
out[1] = #add / 2
return out
`)

// segPlan is the part of an Add batch in one segment.
type segPlan struct {
	start   int64
	name    string
	entries []Entry
}

// place indexes the entries of segs family by family: each entry goes to
// the first zset on its path (its shard of family 0, 1, ...) that holds it
// already or is open. The path of a task depends only on its id, so adding
// a task again finds it, however far the segment has grown since. Before it
// writes into family f >= 1 of a segment it records f+1 families in the
// families hash, so the dispatcher lists every zset that may hold members.
func (ix *Index) place(ctx context.Context, segs []segPlan, registry []redis.Z) error {
	added := make([]int64, len(segs))
	for f := 0; f < MaxFamilies; f++ {
		var calls []scriptCall
		var owner []int       // segment index per call
		var members [][]Entry // entries per call
		var grow []scriptCall
		for si, s := range segs {
			if len(s.entries) == 0 {
				continue
			}
			if f > 0 && ix.grown(s.start) < f+1 {
				grow = append(grow, scriptCall{key: ix.familiesKey(), args: []any{s.name, f + 1}})
			}
			byShard := make(map[int][]Entry)
			var order []int
			for _, e := range s.entries {
				sh := ix.familyShard(e.ID, f)
				if _, ok := byShard[sh]; !ok {
					order = append(order, sh)
				}
				byShard[sh] = append(byShard[sh], e)
			}
			last := "0"
			if f == MaxFamilies-1 {
				last = "1"
			}
			for _, sh := range order {
				for c := range slices.Chunk(byShard[sh], (MaxArgs-2)/2) {
					args := make([]any, 0, 2+2*len(c))
					args = append(args, ix.fill, last)
					for _, e := range c {
						args = append(args, e.ExecAt, e.ID)
					}
					calls = append(calls, scriptCall{key: ix.familyKey(s.name, f, sh), args: args})
					owner = append(owner, si)
					members = append(members, c)
				}
			}
		}
		if len(calls) == 0 {
			break
		}
		if len(grow) > 0 {
			if err := ix.runAll(ctx, growScript, grow, nil); err != nil {
				return fmt.Errorf("record families: %w", err)
			}
			for _, g := range grow {
				seg := segs[slices.IndexFunc(segs, func(s segPlan) bool { return s.name == g.args[0] })]
				ix.setGrown(seg.start, f+1)
			}
		}
		for si := range segs {
			segs[si].entries = segs[si].entries[:0:0]
		}
		var pre func(redis.Pipeliner)
		if f == 0 && len(registry) > 0 {
			pre = func(pl redis.Pipeliner) {
				for c := range slices.Chunk(registry, MaxArgs/2) {
					pl.ZAdd(ctx, ix.registry, c...)
				}
			}
		}
		for lo := 0; lo < len(calls); lo += MaxPipeline {
			hi := min(lo+MaxPipeline, len(calls))
			res, err := ix.runAllResults(ctx, placeScript, calls[lo:hi], pre)
			pre = nil
			if err != nil {
				return fmt.Errorf("place in family %d: %w", f, err)
			}
			for i, r := range res {
				vals, _ := r.([]any)
				if len(vals) == 0 {
					return fmt.Errorf("place in family %d: unexpected reply %v", f, r)
				}
				n, _ := vals[0].(int64)
				si := owner[lo+i]
				added[si] += n
				for _, v := range vals[1:] {
					j, _ := v.(int64)
					segs[si].entries = append(segs[si].entries, members[lo+i][j-1])
				}
			}
		}
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

// grown returns the family count this process knows segment start records.
func (ix *Index) grown(start int64) int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return max(ix.grownSeg[start], 1)
}

// setGrown notes that segment start records at least n families. It keeps
// the note for at most maxGrownNotes segments, dropping the oldest.
func (ix *Index) setGrown(start int64, n int) {
	const maxGrownNotes = 1024
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.grownSeg == nil {
		ix.grownSeg = make(map[int64]int)
	}
	if len(ix.grownSeg) >= maxGrownNotes {
		oldest := int64(1<<63 - 1)
		for s := range ix.grownSeg {
			oldest = min(oldest, s)
		}
		delete(ix.grownSeg, oldest)
	}
	ix.grownSeg[start] = max(ix.grownSeg[start], n)
}

// segmentOf returns the segment part of a zset key of this index, or "".
func (ix *Index) segmentOf(key string) string {
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

package zset

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Forget removes the entries of tasks that will never be delivered (a
// cancelled task, the old row of a moved or replaced one) wherever Add put
// them: the zset on each entry's path (its shard of every family in use)
// in its own segment, or, for an entry whose segment had ended when it was
// added, in a later registered segment that has started by now (plus one
// segment of slack for clock skew). Like RemoveMany it is exact: it
// removes "<ID>" only at ExecAt's score and "<ID>@<score>", touches no
// other task, and lowers the pending counts by the members it removed,
// so Backlog stops counting the entries at once instead of when their
// due time comes and a scan drops them. An entry not indexed (not yet, or
// no longer) costs a lookup and changes nothing; forgetting again is
// harmless. Entries Add would refuse (see Entry) are skipped. It returns
// how many members it removed (0 for entries already gone).
//
// It costs one ZRANGEBYSCORE of the registry when an entry's segment has
// ended, one HMGET of the family counts, then RemoveMany's round trips.
func (ix *Writer) Forget(ctx context.Context, now time.Time, entries []Entry) (n int64, err error) {
	entries = forgettable(entries)
	if len(entries) == 0 {
		return 0, nil
	}
	defer ix.metrics.observe("forget", time.Now(), &err)
	upto := ix.segmentStart(now.UnixMilli()) + ix.segMs // slack of one segment
	// The registered segments an overdue entry may have gone to: one read
	// from the earliest such entry's segment on.
	lo := int64(-1)
	for _, e := range entries {
		if own := ix.segmentStart(e.ExecAt); own < upto && (lo < 0 || own < lo) {
			lo = own
		}
	}
	var later []int64 // starts of registered segments in [lo, upto], ascending
	if lo >= 0 {
		zs, err := ix.segments(ctx, strconv.FormatInt(lo, 10), strconv.FormatInt(upto, 10))
		if err != nil {
			return 0, fmt.Errorf("zset: forget %d entries: %w", len(entries), err)
		}
		for _, z := range zs {
			later = append(later, int64(z.Score))
		}
	}
	// Every segment an entry may be in, by start.
	type cand struct {
		e     Entry
		start int64
	}
	var cands []cand
	seen := map[int64]bool{}
	var names []string
	var starts []int64
	note := func(start int64) {
		if !seen[start] {
			seen[start] = true
			names, starts = append(names, ix.segmentName(start)), append(starts, start)
		}
	}
	for _, e := range entries {
		own := ix.segmentStart(e.ExecAt)
		cands = append(cands, cand{e, own})
		note(own)
		for _, s := range later {
			if s > own && s <= upto {
				cands = append(cands, cand{e, s})
				note(s)
			}
		}
	}
	fams, err := ix.families(ctx, names)
	if err != nil {
		return 0, fmt.Errorf("zset: forget %d entries: %w", len(entries), err)
	}
	famOf := make(map[int64]int, len(starts))
	for i, s := range starts {
		famOf[s] = fams[i]
	}
	byKey := map[string]int{}
	var rs []Removal
	for _, c := range cands {
		name := ix.segmentName(c.start)
		for f := range famOf[c.start] {
			k := ix.familyKey(name, f, ix.familyShard(c.e.ID, f))
			i, ok := byKey[k]
			if !ok {
				i = len(rs)
				byKey[k] = i
				rs = append(rs, Removal{Key: k})
			}
			rs[i].Entries = append(rs[i].Entries, c.e)
		}
	}
	n, err = ix.removeMany(ctx, forgetScript, rs)
	if err != nil {
		return n, fmt.Errorf("zset: forget: %w", err)
	}
	return n, nil
}

// forgetScript is removeScript, and when it removes a plain "<id>" it
// gives the plain form to another task of the id held in the zset as
// "<id>@<score>" (a reschedule or a replace within one zset): so that
// adding that task again (a re-read batch) finds it under "<id>" and adds
// no second member, which Backlog would count twice. A zset holds at most
// Fill+1 members but in the last family: reading it whole is cheap, and
// only done for an id that had its plain member removed.
var forgetScript = redis.NewScript(`
local key = KEYS[1]
local gone = 0
for i = 1, #ARGV, 2 do
	local at, id = ARGV[i], ARGV[i + 1]
	local s = redis.call('ZSCORE', key, id)
	if s and tonumber(s) == tonumber(at) then
		gone = gone + redis.call('ZREM', key, id)
		local long = id .. '@'
		local ms = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
		for j = 1, #ms, 2 do
			if string.sub(ms[j], 1, #long) == long then
				redis.call('ZREM', key, ms[j])
				redis.call('ZADD', key, ms[j + 1], id)
				break
			end
		end
	end
	gone = gone + redis.call('ZREM', key, id .. '@' .. at)
end
return gone
`)

// forgettable returns the entries that Add would accept, each once.
func forgettable(entries []Entry) []Entry {
	out := make([]Entry, 0, len(entries))
	seen := make(map[Entry]bool, len(entries))
	for _, e := range entries {
		if e.check() == "" && !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

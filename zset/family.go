package zset

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

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
// KEYS[1], a shard of one family, and returns {added, sealed, not
// placed...}: the members it added, 1 when the zset is sealed (0 when open)
// and the 1-based positions of the tasks the caller must take to the next
// family. A task already there (plain id with its score,
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
local out = {0, 0}
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
if #out > 2 and not sealed then
	redis.call('ZADD', key, '+inf', '` + sealMember + `')
	sealed = true
end
out[1] = #add / 2
if sealed then
	out[2] = 1
end
return out
`)

// walk places the entries of segs (aligned with place's segments; added
// counts what it adds): each entry goes to the first zset on its path (its
// shard of family 0, 1, ...) that holds it already or is open. The path of
// a task depends only on its id, so adding a task again finds it, however
// far the segment has grown since.
//
// A sealed zset never takes a task again, so the zsets this process saw
// sealed (noteSealed) need no script: an entry starts at the first zset of
// its path not known sealed, after one pipelined ZMSCORE per known-sealed
// zset on the batch's paths finds the entries placed there earlier
// (placed). Then one placeScript per zset touched, pipelined, and the
// entries it turns away go on to the next family in another round trip:
// a dense segment costs two or three round trips an Add, not one per
// family. Before it writes into family f >= 1 of a segment it records f+1
// families in the families hash, so the dispatcher lists every zset that
// may hold members.
func (ix *Writer) walk(ctx context.Context, segs []segPlan, added []int64) error {
	var todo []placing
	for si, s := range segs {
		for _, e := range s.entries {
			todo = append(todo, placing{seg: si, e: e, f: ix.firstOpen(s.start, e.ID)})
		}
	}
	if slices.ContainsFunc(todo, func(p placing) bool { return p.f > 0 }) {
		var err error
		if todo, err = ix.placed(ctx, segs, todo); err != nil {
			return err
		}
	}
	for len(todo) > 0 {
		if err := ix.recordFamilies(ctx, segs, todo); err != nil {
			return err
		}
		calls, members := ix.placeCalls(segs, todo)
		var next []placing
		for lo := 0; lo < len(calls); lo += MaxPipeline {
			hi := min(lo+MaxPipeline, len(calls))
			res, err := ix.runAllResults(ctx, placeScript, calls[lo:hi])
			if err != nil {
				return fmt.Errorf("place: %w", err)
			}
			for i, r := range res {
				vals, _ := r.([]any)
				if len(vals) < 2 {
					return fmt.Errorf("place: unexpected reply %v", r)
				}
				ps := members[lo+i]
				n, _ := vals[0].(int64)
				added[ps[0].seg] += n
				if sealed, _ := vals[1].(int64); sealed == 1 {
					ix.noteSealed(segs[ps[0].seg].start, ps[0].f, ix.familyShard(ps[0].e.ID, ps[0].f))
				}
				for _, v := range vals[2:] {
					j, _ := v.(int64)
					p := ps[j-1]
					p.f++
					next = append(next, p)
				}
			}
		}
		todo = next
	}
	return nil
}

// placing is an entry of an Add on its way along its path: it is to be
// placed in family f (or found there) of segment segs[seg].
type placing struct {
	seg int
	e   Entry
	f   int
}

// placed drops from todo the entries found in a zset of their path that
// this process knows sealed, and returns the rest. An entry not in a sealed
// zset never will be. It looks up the plain ids (one ZMSCORE per zset,
// pipelined), then "<id>@<exec_at>" only where the plain id is
// held at another time (a reused id): a lookup in a listpack is a scan of
// it, so each member asked for costs.
func (ix *Writer) placed(ctx context.Context, segs []segPlan, todo []placing) ([]placing, error) {
	var probes []*probe
	byKey := make(map[string]*probe)
	for i, p := range todo {
		for f := range p.f {
			key := ix.familyKey(segs[p.seg].name, f, ix.familyShard(p.e.ID, f))
			pr := byKey[key]
			if pr == nil {
				pr = &probe{key: key}
				byKey[key] = pr
				probes = append(probes, pr)
			}
			pr.who = append(pr.who, i)
			pr.members = append(pr.members, strconv.FormatUint(p.e.ID, 10))
		}
	}
	if err := ix.lookup(ctx, probes); err != nil {
		return nil, err
	}
	found := make([]bool, len(todo))
	var long []*probe
	for _, pr := range probes {
		var lp *probe
		for j, w := range pr.who {
			score := ix.score(segs[todo[w].seg].start, todo[w].e.ExecAt)
			switch pr.scores[j] {
			case float64(score):
				found[w] = true
			case 0: // not there (no score is 0)
			default:
				if lp == nil {
					lp = &probe{key: pr.key}
					long = append(long, lp)
				}
				lp.who = append(lp.who, w)
				lp.members = append(lp.members, pr.members[j]+"@"+strconv.FormatInt(score, 10))
			}
		}
	}
	if err := ix.lookup(ctx, long); err != nil {
		return nil, err
	}
	for _, lp := range long {
		for j, w := range lp.who {
			found[w] = found[w] || lp.scores[j] != 0
		}
	}
	var rest []placing
	for i, p := range todo {
		if !found[i] {
			rest = append(rest, p)
		}
	}
	return rest, nil
}

// probe is one ZMSCORE of placed: members of key, for the entries who.
type probe struct {
	key     string
	who     []int // positions in todo
	members []string
	scores  []float64 // the answer; 0 for a member not there
}

// lookup runs the ZMSCORE of every probe, MaxPipeline a round trip.
func (ix *Writer) lookup(ctx context.Context, probes []*probe) error {
	for c := range slices.Chunk(probes, MaxPipeline) {
		pl := ix.client.Pipeline()
		cmds := make([]*redis.FloatSliceCmd, len(c))
		for i, pr := range c {
			cmds[i] = pl.ZMScore(ctx, pr.key, pr.members...)
		}
		if _, err := pl.Exec(ctx); err != nil {
			return fmt.Errorf("look up sealed zsets: %w", err)
		}
		for i, pr := range c {
			pr.scores = cmds[i].Val()
		}
	}
	return nil
}

// recordFamilies raises the family count of each segment that todo
// reaches past the count this process knows recorded.
func (ix *Writer) recordFamilies(ctx context.Context, segs []segPlan, todo []placing) error {
	need := make(map[int]int) // segment index -> families
	for _, p := range todo {
		need[p.seg] = max(need[p.seg], p.f+1)
	}
	var grow []scriptCall
	for si, n := range need {
		if ix.grown(segs[si].start) < n {
			grow = append(grow, scriptCall{key: ix.familiesKey(), args: []any{segs[si].name, n}})
		}
	}
	if len(grow) == 0 {
		return nil
	}
	if err := ix.runAll(ctx, growScript, grow); err != nil {
		return fmt.Errorf("record families: %w", err)
	}
	for si, n := range need {
		ix.setGrown(segs[si].start, n)
	}
	return nil
}

// placeCalls returns one placeScript call per zset that todo reaches (at
// most (MaxArgs-2)/2 entries a call), with the entries of each.
func (ix *Writer) placeCalls(segs []segPlan, todo []placing) ([]scriptCall, [][]placing) {
	type target struct {
		seg, f, shard int
	}
	order, byTarget := groupBy(todo, func(p placing) target {
		return target{p.seg, p.f, ix.familyShard(p.e.ID, p.f)}
	})
	var calls []scriptCall
	var members [][]placing
	for _, t := range order {
		last := "0"
		if t.f == MaxFamilies-1 {
			last = "1"
		}
		for c := range slices.Chunk(byTarget[t], (MaxArgs-2)/2) {
			args := make([]any, 0, 2+2*len(c))
			args = append(args, ix.fill, last)
			for _, p := range c {
				args = append(args, ix.score(segs[t.seg].start, p.e.ExecAt), p.e.ID)
			}
			calls = append(calls, scriptCall{key: ix.familyKey(segs[t.seg].name, t.f, t.shard), args: args})
			members = append(members, c)
		}
	}
	return calls, members
}

// firstOpen returns the first family whose zset on the path of id this
// process has not seen sealed in segment start.
func (ix *Writer) firstOpen(start int64, id uint64) int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	sealed := ix.sealedSeg[start]
	f := 0
	for f < MaxFamilies-1 && sealed[famShard{f, ix.familyShard(id, f)}] {
		f++
	}
	return f
}

// famShard names a zset of a segment: shard `shard` of family f.
type famShard struct{ f, shard int }

// noteSealed notes that shard `shard` of family f of segment start is
// sealed, for at most maxNotes segments (dropping the oldest).
func (ix *Writer) noteSealed(start int64, f, shard int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.sealedSeg == nil {
		ix.sealedSeg = make(map[int64]map[famShard]bool)
	}
	m := ix.sealedSeg[start]
	if m == nil {
		dropOldest(ix.sealedSeg)
		m = make(map[famShard]bool)
		ix.sealedSeg[start] = m
	}
	m[famShard{f, shard}] = true
}

// maxNotes caps the segments a process keeps notes on (families recorded,
// zsets sealed): Add writes into current and future segments only, and a
// busy one is noted again at its next Add.
const maxNotes = 1024

// dropOldest makes room for one more segment in notes.
func dropOldest[V any](notes map[int64]V) {
	if len(notes) < maxNotes {
		return
	}
	oldest := int64(1<<63 - 1)
	for s := range notes {
		oldest = min(oldest, s)
	}
	delete(notes, oldest)
}

// grown returns the family count this process knows segment start records.
func (ix *Writer) grown(start int64) int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return max(ix.grownSeg[start], 1)
}

// setGrown notes that segment start records at least n families.
func (ix *Writer) setGrown(start int64, n int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.grownSeg == nil {
		ix.grownSeg = make(map[int64]int)
	}
	if _, ok := ix.grownSeg[start]; !ok {
		dropOldest(ix.grownSeg)
	}
	ix.grownSeg[start] = max(ix.grownSeg[start], n)
}

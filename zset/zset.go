package zset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

const (
	// MaxArgs caps the arguments of one command or script (ZADD score/member
	// pairs and script (exec_at, id) pairs count two each). Redis's Lua
	// unpack() fails past about 8,000 values; the scripts stay below.
	MaxArgs = 5000
	// MaxPipeline caps the commands sent in one pipeline round trip.
	MaxPipeline = 2000
	// DefaultDueLimit is the Due limit used when limit <= 0.
	DefaultDueLimit = 1000
	// DefaultAddr is the Redis address delayd and delayctl use by default
	// (their --redis flag); the index itself takes a ready client.
	DefaultAddr = "127.0.0.1:6379"
	// DefaultPrefix, DefaultSegment and DefaultShards are the defaults of
	// Config. A segment denser than Shards*Fill tasks grows shard families,
	// so every zset stays a listpack however the tasks are spread; see the
	// package doc, "Shard families" and "Memory".
	DefaultPrefix  = "delayq"
	DefaultSegment = time.Minute
	DefaultShards  = 256
	// MaxID is the largest task id Add accepts, 2^63-1 (payload.MaxID): a
	// member up to it fits a listpack integer.
	MaxID = 1<<63 - 1

	maxExecAt = 1 << 53 // largest exec_at a float64 score holds exactly
)

var (
	// ErrConfig is wrapped by every Config.Validate error.
	ErrConfig = errors.New("zset: invalid config")
	// ErrBadEntry is wrapped by the *BadEntryError that Add returns for
	// entries it refuses: ExecAt not a positive unix millisecond time that a
	// score holds exactly, or ID above MaxID. Such an entry can never be
	// indexed; retrying does not help.
	ErrBadEntry = errors.New("zset: bad entry")
	// ErrBadMember is returned when a zset holds a member in neither member
	// form (something other than delayq wrote to the key).
	ErrBadMember = errors.New("zset: bad member")
)

// BadEntryError lists the entries an Add call refused. Add returns it only
// after it indexed every other entry of the call.
type BadEntryError struct {
	// Indexes are the positions of the refused entries in the slice given
	// to Add, ascending.
	Indexes []int
	// Reasons[i] says why the entry at Indexes[i] was refused.
	Reasons []string
}

// Error lists the first three refused entries with their reasons.
func (e *BadEntryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d refused:", ErrBadEntry, len(e.Indexes))
	for i, idx := range e.Indexes {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(e.Indexes)-i)
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " #%d %s", idx, e.Reasons[i])
	}
	return b.String()
}

// Unwrap returns ErrBadEntry.
func (e *BadEntryError) Unwrap() error { return ErrBadEntry }

// Config configures an Index. The zero value means the defaults.
type Config struct {
	// Prefix of every key (default DefaultPrefix, "delayq"). Keep Redis
	// Cluster hash tags ({...}) out of it: they would put every key in one
	// slot.
	Prefix string
	// Segment is the time span of one zset, a whole number of seconds from
	// 1s to 24h (default DefaultSegment, 1m).
	Segment time.Duration
	// Shards is the number of zsets per segment, 1 to 65536 (default
	// DefaultShards, 256).
	Shards int
	// Fill is how many members a zset takes before it seals and further
	// tasks of its shard go to the next shard family (see the package doc,
	// "Shard families"), 1 to 1<<20 (default DefaultFill, 127). Keep it
	// below Redis's zset-max-listpack-entries so every zset stays a
	// listpack.
	Fill int
	// Registerer receives the store_call_seconds and store_errors_total
	// metrics; nil means they are not registered.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Segment == 0 {
		c.Segment = DefaultSegment
	}
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	if c.Fill == 0 {
		c.Fill = DefaultFill
	}
}

// Validate reports every problem with c at once, each wrapping ErrConfig.
// New calls it after filling in the defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.Segment < time.Second || c.Segment > 24*time.Hour || c.Segment%time.Second != 0 {
		errs = append(errs, fmt.Errorf("%w: segment %v: want whole seconds from 1s to 24h", ErrConfig, c.Segment))
	}
	if c.Shards < 1 || c.Shards > 1<<16 {
		errs = append(errs, fmt.Errorf("%w: shards %d: want 1 to 65536", ErrConfig, c.Shards))
	}
	if c.Fill < 0 || c.Fill > 1<<20 {
		errs = append(errs, fmt.Errorf("%w: fill %d: want 1 to 1048576 (0: default)", ErrConfig, c.Fill))
	}
	return errors.Join(errs...)
}

// Entry is one indexed task. Its member is the decimal ID, or
// "<ID>@<ExecAt>" when the zset already holds the plain ID of another task
// (see the package doc); its score is ExecAt.
type Entry struct {
	ID     uint64
	ExecAt int64 // unix milliseconds
}

// SegmentCount is one registered segment and how many members its shards
// hold.
type SegmentCount struct {
	Segment string // as in the key, e.g. "202501311459"
	Start   int64  // unix ms, inclusive
	End     int64  // unix ms, exclusive
	Pending int64
}

// Index is the segmented Redis index. It is safe for concurrent use.
type Index struct {
	client   redis.UniversalClient
	prefix   string
	registry string
	segMs    int64
	layout   string
	shards   int
	fill     int
	metrics  *metrics

	mu        sync.Mutex
	grownSeg  map[int64]int               // segment start -> families known recorded
	sealedSeg map[int64]map[famShard]bool // segment start -> zsets seen sealed
}

// New returns an Index over client.
func New(client redis.UniversalClient, cfg Config) (*Index, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("zset: nil redis client")
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	layout := "200601021504"
	if cfg.Segment%time.Minute != 0 {
		layout = "20060102150405"
	}
	return &Index{
		client:   client,
		prefix:   cfg.Prefix,
		registry: cfg.Prefix + ":segments",
		segMs:    cfg.Segment.Milliseconds(),
		layout:   layout,
		shards:   cfg.Shards,
		fill:     cfg.Fill,
		metrics:  m,
	}, nil
}

// Registry returns the key of the segment registry.
func (ix *Index) Registry() string { return ix.registry }

// Key returns the zset key of e's own segment. Add may have put e into a
// later segment (see the package doc); Pending looks in both.
func (ix *Index) Key(e Entry) string {
	return ix.key(ix.segmentName(ix.segmentStart(e.ExecAt)), ix.shard(e.ID))
}

func (ix *Index) segmentStart(ms int64) int64 {
	s := ms - ms%ix.segMs
	if ms < 0 && ms%ix.segMs != 0 {
		s -= ix.segMs
	}
	return s
}

func (ix *Index) segmentName(start int64) string {
	return time.UnixMilli(start).UTC().Format(ix.layout)
}

func (ix *Index) key(segment string, shard int) string {
	return ix.familyKey(segment, 0, shard)
}

func (ix *Index) shard(id uint64) int {
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

// plan is an Add batch grouped by segment.
type plan struct {
	segments []redis.Z // registry members: segment name, score start
	segs     []segPlan
	bad      *BadEntryError
}

// check returns why e cannot be indexed, or "".
func (e Entry) check() string {
	switch {
	case e.ExecAt <= 0:
		return fmt.Sprintf("id %d: exec_at %d is not after the unix epoch", e.ID, e.ExecAt)
	case e.ExecAt > maxExecAt:
		return fmt.Sprintf("id %d: exec_at %d is past 2^53 ms", e.ID, e.ExecAt)
	case e.ID > MaxID:
		return fmt.Sprintf("id %d is above 2^63-1", e.ID)
	}
	return ""
}

// plan groups entries by target segment. Entries whose segment ended at or
// before nowMs go to the segment of nowMs. Bad entries are left out and
// listed in plan.bad.
func (ix *Index) plan(nowMs int64, entries []Entry) plan {
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

// removeScript removes the tasks (exec_at, id) in ARGV from the zset
// KEYS[1]: the plain id member when its score is that exec_at, and the
// member "<id>@<exec_at>" if there is one. It returns how many members it
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
func (ix *Index) Add(ctx context.Context, now time.Time, entries []Entry) error {
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

func (ix *Index) add(ctx context.Context, p plan) (err error) {
	defer ix.metrics.observe("add", time.Now(), &err)
	return ix.place(ctx, p.segs, p.segments)
}

// scriptCall is one run of a script on one key.
type scriptCall struct {
	key  string
	args []any
}

// runAll runs script once per call (see runAllResults) and drops the
// replies.
func (ix *Index) runAll(ctx context.Context, script *redis.Script, calls []scriptCall) error {
	_, err := ix.runAllResults(ctx, script, calls)
	return err
}

// runAllResults runs script once per call in one pipeline with EVALSHA. The
// calls that met NOSCRIPT (a Redis that has not cached the script yet, or a
// failed-over replica) run again after one SCRIPT LOAD (on every master of a
// cluster), and those that still meet it (a failover in between) with EVAL:
// a pipeline cannot fall back on its own, and resending the script text
// with every call would multiply the request size. It returns the reply of
// each call.
func (ix *Index) runAllResults(ctx context.Context, script *redis.Script, calls []scriptCall) ([]any, error) {
	out := make([]any, len(calls))
	idx := make([]int, len(calls))
	for i := range idx {
		idx[i] = i
	}
	for round := range 3 {
		eval := round == 2
		if round == 1 {
			if err := script.Load(ctx, ix.client).Err(); err != nil {
				return nil, fmt.Errorf("script load: %w", err)
			}
		}
		pl := ix.client.Pipeline()
		cmds := make([]*redis.Cmd, len(idx))
		for i, ci := range idx {
			c := calls[ci]
			if eval {
				cmds[i] = script.Eval(ctx, pl, []string{c.key}, c.args...)
			} else {
				cmds[i] = script.EvalSha(ctx, pl, []string{c.key}, c.args...)
			}
		}
		_, _ = pl.Exec(ctx) // every command carries its own error
		var again []int
		for i, cmd := range cmds {
			switch err := cmd.Err(); {
			case err == nil:
				out[idx[i]] = cmd.Val()
			case !eval && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")):
				again = append(again, idx[i])
			default:
				return nil, err
			}
		}
		if len(again) == 0 {
			return out, nil
		}
		idx = again
	}
	return out, nil // not reached: EVAL never answers NOSCRIPT
}

// segments returns registered segments with lo <= start <= hi.
func (ix *Index) segments(ctx context.Context, lo, hi string) ([]redis.Z, error) {
	segs, err := ix.client.ZRangeByScoreWithScores(ctx, ix.registry, &redis.ZRangeBy{Min: lo, Max: hi}).Result()
	if err != nil {
		return nil, fmt.Errorf("read registry %s: %w", ix.registry, err)
	}
	return segs, nil
}

// DueKeys returns the keys of the zsets, in registered segments that start
// at or before until, that hold members with score <= until, ordered by
// segment, family and shard. It reads the family count of those segments
// and issues one ZCOUNT per zset of every family in use.
func (ix *Index) DueKeys(ctx context.Context, until int64) ([]string, error) {
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
func (ix *Index) DueGroups(ctx context.Context, until int64) (groups []Group, err error) {
	defer ix.metrics.observe("due_keys", time.Now(), &err)
	hi := strconv.FormatInt(until, 10)
	all, segs, err := ix.keysOf(ctx, "-inf", hi)
	if err != nil {
		return nil, fmt.Errorf("zset: due keys: %w", err)
	}
	counts, err := ix.counts(ctx, all, func(pl redis.Pipeliner, key string) *redis.IntCmd {
		return pl.ZCount(ctx, key, "-inf", hi)
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

// keysOf returns the registered segments with lo <= start <= hi and the
// keys of every family in use of each, in order; ends[i] is the end (in
// keys) of segment i.
func (ix *Index) keysOf(ctx context.Context, lo, hi string) (keys []string, segs []segKeys, err error) {
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

// Due returns up to limit entries of key with score <= until, lowest score
// first (ZRANGEBYSCORE key -inf until LIMIT 0 limit WITHSCORES), reading
// both member forms. limit <= 0 means DefaultDueLimit; it is capped at
// MaxArgs. Fewer than limit entries means nothing more was due. A member in
// neither form is ErrBadMember.
func (ix *Index) Due(ctx context.Context, key string, until int64, limit int) ([]Entry, error) {
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
// more.
func (ix *Index) DueMany(ctx context.Context, rs []Range, limit int) (out [][]Entry, err error) {
	defer ix.metrics.observe("due", time.Now(), &err)
	if limit <= 0 {
		limit = DefaultDueLimit
	}
	limit = min(limit, MaxArgs)
	out = make([][]Entry, len(rs))
	read := make([]int, len(rs))
	todo := make([]int, len(rs))
	for i := range rs {
		read[i], todo[i] = limit, i
	}
	for len(todo) > 0 {
		var again []int
		for c := range slices.Chunk(todo, MaxPipeline) {
			pl := ix.client.Pipeline()
			cmds := make([]*redis.ZSliceCmd, len(c))
			for j, i := range c {
				cmds[j] = pl.ZRangeByScoreWithScores(ctx, rs[i].Key, &redis.ZRangeBy{
					Min: "-inf", Max: strconv.FormatInt(rs[i].Until, 10), Count: int64(read[i]),
				})
			}
			_, _ = pl.Exec(ctx) // every command carries its own error
			for j, i := range c {
				zs, err := cmds[j].Result()
				if err != nil {
					return nil, fmt.Errorf("zset: due %s: %w", rs[i].Key, err)
				}
				entries, both, err := parseDue(rs[i].Key, zs)
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

// parseDue reads the members of a Due answer of key, one entry per task;
// both reports a member of the "<id>@<exec_at>" form.
func parseDue(key string, zs []redis.Z) (entries []Entry, both bool, err error) {
	entries = make([]Entry, 0, len(zs))
	for _, z := range zs {
		m, _ := z.Member.(string)
		e, long, ok := parseMember(m, z.Score)
		if !ok {
			return nil, false, fmt.Errorf("%w: %s holds %q (score %v)", ErrBadMember, key, m, z.Score)
		}
		both = both || long
		entries = append(entries, e)
	}
	if both {
		entries = dedupe(entries)
	}
	return entries, both, nil
}

// parseMember reads a member "<id>" (score = exec_at) or "<id>@<exec_at>"
// (long reports that form); the exec_at of the long form must be its score.
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

// Remove deletes the given tasks from key, score-checked: for each entry the
// member "<ID>" only if its score is ExecAt, and the member
// "<ID>@<ExecAt>". Another task reusing the ID stays. It runs one script per
// MaxArgs/2 entries, then lowers the pending count of the key's segment by
// the members it removed.
func (ix *Index) Remove(ctx context.Context, key string, entries []Entry) error {
	return ix.RemoveMany(ctx, []Removal{{Key: key, Entries: entries}})
}

// Removal is what RemoveMany removes from one zset.
type Removal struct {
	Key     string
	Entries []Entry
}

// RemoveMany is Remove for each of rs, in one pipelined round trip of
// scripts and one of pending counts.
func (ix *Index) RemoveMany(ctx context.Context, rs []Removal) (err error) {
	var (
		calls []scriptCall
		segs  []string // segment per call
		n     int
	)
	for _, r := range rs {
		n += len(r.Entries)
		for c := range slices.Chunk(r.Entries, MaxArgs/2) {
			args := make([]any, 0, 2*len(c))
			for _, e := range c {
				args = append(args, e.ExecAt, e.ID)
			}
			calls = append(calls, scriptCall{key: r.Key, args: args})
			segs = append(segs, ix.segmentOf(r.Key))
		}
	}
	if len(calls) == 0 {
		return nil
	}
	defer ix.metrics.observe("remove", time.Now(), &err)
	removed := make(map[string]int64)
	for lo := 0; lo < len(calls); lo += MaxPipeline {
		hi := min(lo+MaxPipeline, len(calls))
		res, err := ix.runAllResults(ctx, removeScript, calls[lo:hi])
		if err != nil {
			return fmt.Errorf("zset: remove %d entries from %d zsets (%s...): %w", n, len(rs), rs[0].Key, err)
		}
		for i, r := range res {
			if k, _ := r.(int64); k > 0 && segs[lo+i] != "" {
				removed[segs[lo+i]] += k
			}
		}
	}
	if len(removed) == 0 {
		return nil
	}
	pl := ix.client.Pipeline()
	for seg, k := range removed {
		pl.HIncrBy(ctx, ix.pendingKey(), seg, -k)
	}
	if _, err := pl.Exec(ctx); err != nil {
		return fmt.Errorf("zset: count %d removed from %d segments: %w", n, len(removed), err)
	}
	return nil
}

// Retire removes from the registry the segments that ended at or before
// `before` (unix ms) and whose zsets hold no task, and returns how many it
// removed. It unlinks their zsets (sealed ones keep their seal member) and
// drops their family, pending and offered counts. Pass a time well behind
// now (the dispatcher's grace): Add never writes into an ended segment, so
// an empty ended segment stays empty.
func (ix *Index) Retire(ctx context.Context, before int64) (n int, err error) {
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
func (ix *Index) Backlog(ctx context.Context) (out []SegmentCount, err error) {
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
func (ix *Index) countUncounted(ctx context.Context, out []SegmentCount, idx []int) error {
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
func (ix *Index) Pending(ctx context.Context, e Entry) (ok bool, err error) {
	defer ix.metrics.observe("pending", time.Now(), &err)
	own := ix.segmentStart(e.ExecAt)
	// Slack of one segment for clock skew between this process and ingest.
	upto := max(own, ix.segmentStart(time.Now().UnixMilli())+ix.segMs)
	segs, err := ix.segments(ctx, strconv.FormatInt(own, 10), strconv.FormatInt(upto, 10))
	if err != nil {
		return false, fmt.Errorf("zset: pending %d: %w", e.ID, err)
	}
	names := []string{ix.segmentName(own)}
	for _, s := range segs {
		if name := s.Member.(string); name != names[0] {
			names = append(names, name)
		}
	}
	fams, err := ix.families(ctx, names)
	if err != nil {
		return false, fmt.Errorf("zset: pending %d: %w", e.ID, err)
	}
	var keys []string
	for i, name := range names {
		for f := range fams[i] {
			keys = append(keys, ix.familyKey(name, f, ix.familyShard(e.ID, f)))
		}
	}
	plain := strconv.FormatUint(e.ID, 10)
	long := plain + "@" + strconv.FormatInt(e.ExecAt, 10)
	for c := range slices.Chunk(keys, MaxPipeline) {
		pl := ix.client.Pipeline()
		cmds := make([]*redis.FloatSliceCmd, len(c))
		for i, key := range c {
			cmds[i] = pl.ZMScore(ctx, key, plain, long)
		}
		if _, err := pl.Exec(ctx); err != nil {
			return false, fmt.Errorf("zset: pending %d: %w", e.ID, err)
		}
		for _, cmd := range cmds {
			// ZMSCORE reads a missing member as 0, never a valid exec_at.
			if s := cmd.Val(); int64(s[0]) == e.ExecAt || s[1] != 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

// counts runs one integer command per key in pipelines of MaxPipeline.
func (ix *Index) counts(ctx context.Context, keys []string, cmd func(redis.Pipeliner, string) *redis.IntCmd) ([]int64, error) {
	out := make([]int64, 0, len(keys))
	for c := range slices.Chunk(keys, MaxPipeline) {
		pl := ix.client.Pipeline()
		cmds := make([]*redis.IntCmd, len(c))
		for i, key := range c {
			cmds[i] = cmd(pl, key)
		}
		if _, err := pl.Exec(ctx); err != nil {
			return nil, err
		}
		for _, c := range cmds {
			out = append(out, c.Val())
		}
	}
	return out, nil
}

// batch queues pipelined commands and executes them MaxPipeline at a time.
type batch struct {
	pl  redis.Pipeliner
	err error
}

func (ix *Index) newBatch() *batch {
	return &batch{pl: ix.client.Pipeline()}
}

func (b *batch) add(ctx context.Context, queue func(redis.Pipeliner)) {
	if b.err != nil {
		return
	}
	queue(b.pl)
	if b.pl.Len() >= MaxPipeline {
		b.err = b.flush(ctx)
	}
}

func (b *batch) flush(ctx context.Context) error {
	if b.err != nil || b.pl.Len() == 0 {
		return b.err
	}
	_, b.err = b.pl.Exec(ctx)
	return b.err
}

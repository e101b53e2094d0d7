package zset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// Config. 256 shards of 1-minute segments keep every zset a listpack (at
	// most 128 members) up to about 1.3M tasks due per hour, evenly spread;
	// see the package doc, "Memory".
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
	metrics  *metrics
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
	var b strings.Builder
	b.Grow(len(ix.prefix) + len(segment) + 8)
	b.WriteString(ix.prefix)
	b.WriteByte(':')
	b.WriteString(segment)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(shard))
	return b.String()
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

// plan is an Add batch grouped by key.
type plan struct {
	segments []redis.Z // registry members: segment name, score start
	groups   []group
	bad      *BadEntryError
}

type group struct {
	key     string
	members []redis.Z
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

// plan groups entries by target zset. Entries whose segment ended at or
// before nowMs go to the segment of nowMs. Bad entries are left out and
// listed in plan.bad.
func (ix *Index) plan(nowMs int64, entries []Entry) plan {
	type gk struct {
		seg   int64
		shard int
	}
	var p plan
	nowSeg := ix.segmentStart(nowMs)
	byKey := make(map[gk]int, 8)
	segIdx := make(map[int64]string, 2)
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
		k := gk{seg, ix.shard(e.ID)}
		g, ok := byKey[k]
		if !ok {
			name, ok := segIdx[seg]
			if !ok {
				name = ix.segmentName(seg)
				segIdx[seg] = name
				p.segments = append(p.segments, redis.Z{Score: float64(seg), Member: name})
			}
			g = len(p.groups)
			byKey[k] = g
			p.groups = append(p.groups, group{key: ix.key(name, k.shard)})
		}
		p.groups[g].members = append(p.groups[g].members, redis.Z{
			Score:  float64(e.ExecAt),
			Member: strconv.FormatUint(e.ID, 10),
		})
	}
	return p
}

// addScript adds the (exec_at, id) pairs in ARGV to the zset KEYS[1], each
// as a member of its own: nothing when the plain id is there with that score
// (the same task), the plain id when it is missing, else "<id>@<exec_at>".
// Add runs it only for the ZADD NX calls that added fewer members than they
// carried, so the plain ids are normally all there: one ZMSCORE decides. It
// unpacks at most len(ARGV) values, so callers keep ARGV under MaxArgs.
var addScript = redis.NewScript(`
local key = KEYS[1]
local ids = {}
for i = 2, #ARGV, 2 do
	ids[#ids + 1] = ARGV[i]
end
local scores = redis.call('ZMSCORE', key, unpack(ids))
local long = {}
for j = 1, #ids do
	local at, id, score = ARGV[2 * j - 1], ids[j], scores[j]
	if not score then
		if redis.call('ZADD', key, 'NX', at, id) == 1 then
			score = at
		else
			score = redis.call('ZSCORE', key, id)
		end
	end
	if tonumber(score) ~= tonumber(at) then
		long[#long + 1] = at
		long[#long + 1] = id .. '@' .. at
	end
end
if #long > 0 then
	redis.call('ZADD', key, unpack(long))
end
return #long / 2
`)

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

// Add indexes entries: one registry ZADD for the segments touched, then one
// ZADD NX per zset, all pipelined. A ZADD NX that adds fewer members than it
// carries met ids already in its zset (a task added again, or another task
// reusing the id): addScript then adds those chunks exactly, in a second
// pipeline. An entry whose segment has already ended relative to now goes
// into the segment of now, keeping its score.
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
	if len(p.groups) > 0 {
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
	type zadd struct {
		key     string
		members []redis.Z
		cmd     *redis.IntCmd
	}
	var sent []zadd
	b := ix.newBatch()
	for c := range slices.Chunk(p.segments, MaxArgs/2) {
		b.add(ctx, func(pl redis.Pipeliner) { pl.ZAdd(ctx, ix.registry, c...) })
	}
	for _, g := range p.groups {
		for c := range slices.Chunk(g.members, (MaxArgs-1)/2) { // NX counts
			var cmd *redis.IntCmd
			b.add(ctx, func(pl redis.Pipeliner) { cmd = pl.ZAddNX(ctx, g.key, c...) })
			sent = append(sent, zadd{key: g.key, members: c, cmd: cmd})
		}
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	var checks []scriptCall
	for _, z := range sent {
		if z.cmd.Val() == int64(len(z.members)) {
			continue
		}
		args := make([]any, 0, 2*len(z.members))
		for _, m := range z.members {
			args = append(args, int64(m.Score), m.Member)
		}
		checks = append(checks, scriptCall{key: z.key, args: args})
	}
	for c := range slices.Chunk(checks, MaxPipeline) {
		if err := ix.runAll(ctx, addScript, c); err != nil {
			return fmt.Errorf("add script: %w", err)
		}
	}
	return nil
}

// scriptCall is one run of a script on one key.
type scriptCall struct {
	key  string
	args []any
}

// runAll runs script once per call in one pipeline with EVALSHA, then the
// calls that met NOSCRIPT (a Redis that has not cached the script yet, or a
// failed-over replica) again with EVAL: a pipeline cannot fall back on its
// own.
func (ix *Index) runAll(ctx context.Context, script *redis.Script, calls []scriptCall) error {
	for _, eval := range []bool{false, true} {
		pl := ix.client.Pipeline()
		cmds := make([]*redis.Cmd, len(calls))
		for i, c := range calls {
			if eval {
				cmds[i] = script.Eval(ctx, pl, []string{c.key}, c.args...)
			} else {
				cmds[i] = script.EvalSha(ctx, pl, []string{c.key}, c.args...)
			}
		}
		_, _ = pl.Exec(ctx) // every command carries its own error
		var again []scriptCall
		for i, cmd := range cmds {
			switch err := cmd.Err(); {
			case err == nil:
			case !eval && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")):
				again = append(again, calls[i])
			default:
				return err
			}
		}
		if len(again) == 0 {
			return nil
		}
		calls = again
	}
	return nil // not reached: EVAL never answers NOSCRIPT
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
// segment and shard.
func (ix *Index) DueKeys(ctx context.Context, until int64) (keys []string, err error) {
	defer ix.metrics.observe("due_keys", time.Now(), &err)
	hi := strconv.FormatInt(until, 10)
	segs, err := ix.segments(ctx, "-inf", hi)
	if err != nil {
		return nil, fmt.Errorf("zset: due keys: %w", err)
	}
	all := make([]string, 0, len(segs)*ix.shards)
	for _, s := range segs {
		for shard := range ix.shards {
			all = append(all, ix.key(s.Member.(string), shard))
		}
	}
	counts, err := ix.counts(ctx, all, func(pl redis.Pipeliner, key string) *redis.IntCmd {
		return pl.ZCount(ctx, key, "-inf", hi)
	})
	if err != nil {
		return nil, fmt.Errorf("zset: due keys: %w", err)
	}
	for i, n := range counts {
		if n > 0 {
			keys = append(keys, all[i])
		}
	}
	return keys, nil
}

// Due returns up to limit entries of key with score <= until, lowest score
// first (ZRANGEBYSCORE key -inf until LIMIT 0 limit WITHSCORES), reading
// both member forms. limit <= 0 means DefaultDueLimit; it is capped at
// MaxArgs. Fewer than limit entries means nothing more was due. A member in
// neither form is ErrBadMember.
func (ix *Index) Due(ctx context.Context, key string, until int64, limit int) (entries []Entry, err error) {
	defer ix.metrics.observe("due", time.Now(), &err)
	if limit <= 0 {
		limit = DefaultDueLimit
	}
	limit = min(limit, MaxArgs)
	read := limit
	for {
		zs, err := ix.client.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(until, 10), Count: int64(read),
		}).Result()
		if err != nil {
			return nil, fmt.Errorf("zset: due %s: %w", key, err)
		}
		entries = make([]Entry, 0, len(zs))
		both := false // a member "<id>@<exec_at>" was read
		for _, z := range zs {
			m, _ := z.Member.(string)
			e, long, ok := parseMember(m, z.Score)
			if !ok {
				return nil, fmt.Errorf("%w: %s holds %q (score %v)", ErrBadMember, key, m, z.Score)
			}
			both = both || long
			entries = append(entries, e)
		}
		if both {
			entries = dedupe(entries)
		}
		// Both forms of one task read as one entry: read that many more,
		// so that a short answer still means nothing more is due.
		if len(zs) < read || len(entries) >= limit || read >= 2*MaxArgs {
			return entries[:min(len(entries), limit)], nil
		}
		read += limit - len(entries)
	}
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
// MaxArgs/2 entries.
func (ix *Index) Remove(ctx context.Context, key string, entries []Entry) (err error) {
	if len(entries) == 0 {
		return nil
	}
	defer ix.metrics.observe("remove", time.Now(), &err)
	for c := range slices.Chunk(entries, MaxArgs/2) {
		args := make([]any, 0, 2*len(c))
		for _, e := range c {
			args = append(args, e.ExecAt, e.ID)
		}
		if err := removeScript.Run(ctx, ix.client, []string{key}, args...).Err(); err != nil {
			return fmt.Errorf("zset: remove %d from %s: %w", len(entries), key, err)
		}
	}
	return nil
}

// Retire removes from the registry the segments that ended at or before
// `before` (unix ms) and whose shards are all empty, and returns how many
// it removed. Pass a time well behind now (the dispatcher's grace): Add
// never writes into an ended segment, so an empty ended segment stays
// empty.
func (ix *Index) Retire(ctx context.Context, before int64) (n int, err error) {
	defer ix.metrics.observe("retire", time.Now(), &err)
	segs, err := ix.segments(ctx, "-inf", strconv.FormatInt(before-ix.segMs, 10))
	if err != nil {
		return 0, fmt.Errorf("zset: retire: %w", err)
	}
	if len(segs) == 0 {
		return 0, nil
	}
	pending, err := ix.cardinalities(ctx, segs)
	if err != nil {
		return 0, fmt.Errorf("zset: retire: %w", err)
	}
	var empty []any
	for i, s := range segs {
		if pending[i] == 0 {
			empty = append(empty, s.Member)
		}
	}
	if len(empty) == 0 {
		return 0, nil
	}
	b := ix.newBatch()
	for c := range slices.Chunk(empty, MaxArgs) {
		b.add(ctx, func(pl redis.Pipeliner) { pl.ZRem(ctx, ix.registry, c...) })
	}
	if err := b.flush(ctx); err != nil {
		return 0, fmt.Errorf("zset: retire %d segments: %w", len(empty), err)
	}
	return len(empty), nil
}

// Backlog returns every registered segment with the number of members its
// shards hold, ordered by start. It costs one ZCARD per segment and shard.
func (ix *Index) Backlog(ctx context.Context) (out []SegmentCount, err error) {
	defer ix.metrics.observe("backlog", time.Now(), &err)
	segs, err := ix.segments(ctx, "-inf", "+inf")
	if err != nil {
		return nil, fmt.Errorf("zset: backlog: %w", err)
	}
	pending, err := ix.cardinalities(ctx, segs)
	if err != nil {
		return nil, fmt.Errorf("zset: backlog: %w", err)
	}
	out = make([]SegmentCount, len(segs))
	for i, s := range segs {
		start := int64(s.Score)
		out[i] = SegmentCount{Segment: s.Member.(string), Start: start, End: start + ix.segMs, Pending: pending[i]}
	}
	return out, nil
}

// Pending reports whether e is still indexed: a zset of its own segment, or
// of a later registered segment that had started by now (where Add puts
// overdue entries), holds the member "<ID>" with score e.ExecAt or the
// member "<ID>@<ExecAt>".
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
	shard := ix.shard(e.ID)
	plain := strconv.FormatUint(e.ID, 10)
	long := plain + "@" + strconv.FormatInt(e.ExecAt, 10)
	for c := range slices.Chunk(names, MaxPipeline) {
		pl := ix.client.Pipeline()
		cmds := make([]*redis.FloatSliceCmd, len(c))
		for i, name := range c {
			cmds[i] = pl.ZMScore(ctx, ix.key(name, shard), plain, long)
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

// cardinalities returns the total ZCARD over all shards of each segment.
func (ix *Index) cardinalities(ctx context.Context, segs []redis.Z) ([]int64, error) {
	keys := make([]string, 0, len(segs)*ix.shards)
	for _, s := range segs {
		for shard := range ix.shards {
			keys = append(keys, ix.key(s.Member.(string), shard))
		}
	}
	counts, err := ix.counts(ctx, keys, func(pl redis.Pipeliner, key string) *redis.IntCmd {
		return pl.ZCard(ctx, key)
	})
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(segs))
	for i, n := range counts {
		out[i/ix.shards] += n
	}
	return out, nil
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

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
	// MaxArgs caps the arguments of one command (ZADD score/member pairs
	// count two each).
	MaxArgs = 5000
	// MaxPipeline caps the commands sent in one pipeline round trip.
	MaxPipeline = 2000
	// DefaultDueLimit is the Due limit used when limit <= 0.
	DefaultDueLimit = 1000
	// DefaultSegment and DefaultShards are the defaults of Config. 256
	// shards of 1-minute segments keep every zset a listpack (at most 128
	// members) up to about 1.3M tasks due per hour, evenly spread; see the
	// package doc, "Memory".
	DefaultSegment = time.Minute
	DefaultShards  = 256

	maxExecAt = 1 << 53 // largest exec_at a float64 score holds exactly
)

var (
	// ErrBadEntry is returned by Add for an entry whose ExecAt is not a
	// positive unix millisecond time that a score holds exactly.
	ErrBadEntry = errors.New("zset: bad entry")
	// ErrBadMember is returned when a zset holds a member that is not a
	// decimal uint64 (something other than delayq wrote to the key).
	ErrBadMember = errors.New("zset: bad member")
)

// Config configures an Index. The zero value means the defaults.
type Config struct {
	// Prefix of every key. Default "delayq".
	Prefix string
	// Segment is the time span of one zset, a whole number of seconds from
	// 1s to 24h. Default 1m.
	Segment time.Duration
	// Shards is the number of zsets per segment, 1 to 65536. Default 256.
	Shards int
	// Registerer receives the store_call_seconds and store_errors_total
	// metrics; nil means they are not registered.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.Prefix == "" {
		c.Prefix = "delayq"
	}
	if c.Segment == 0 {
		c.Segment = DefaultSegment
	}
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
}

// Validate reports every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Prefix == "" {
		errs = append(errs, errors.New("zset: empty prefix"))
	}
	if c.Segment < time.Second || c.Segment > 24*time.Hour || c.Segment%time.Second != 0 {
		errs = append(errs, fmt.Errorf("zset: segment %v: want whole seconds from 1s to 24h", c.Segment))
	}
	if c.Shards < 1 || c.Shards > 1<<16 {
		errs = append(errs, fmt.Errorf("zset: shards %d: want 1 to 65536", c.Shards))
	}
	return errors.Join(errs...)
}

// Entry is one indexed task: member = decimal ID, score = ExecAt.
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
}

type group struct {
	key     string
	members []redis.Z
}

// plan groups entries by target zset. Entries whose segment ended at or
// before nowMs go to the segment of nowMs.
func (ix *Index) plan(nowMs int64, entries []Entry) (plan, error) {
	type gk struct {
		seg   int64
		shard int
	}
	var p plan
	nowSeg := ix.segmentStart(nowMs)
	byKey := make(map[gk]int, 8)
	segIdx := make(map[int64]string, 2)
	for _, e := range entries {
		if e.ExecAt <= 0 || e.ExecAt > maxExecAt {
			return plan{}, fmt.Errorf("%w: id %d exec_at %d", ErrBadEntry, e.ID, e.ExecAt)
		}
		seg := ix.segmentStart(e.ExecAt)
		if seg+ix.segMs <= nowMs {
			seg = nowSeg
		}
		k := gk{seg, ix.shard(e.ID)}
		i, ok := byKey[k]
		if !ok {
			name, ok := segIdx[seg]
			if !ok {
				name = ix.segmentName(seg)
				segIdx[seg] = name
				p.segments = append(p.segments, redis.Z{Score: float64(seg), Member: name})
			}
			i = len(p.groups)
			byKey[k] = i
			p.groups = append(p.groups, group{key: ix.key(name, k.shard)})
		}
		p.groups[i].members = append(p.groups[i].members, redis.Z{
			Score:  float64(e.ExecAt),
			Member: strconv.FormatUint(e.ID, 10),
		})
	}
	return p, nil
}

// Add indexes entries: one registry ZADD for the segments touched, then one
// ZADD per zset, all pipelined. An entry whose segment has already ended
// relative to now goes into the segment of now, keeping its score.
func (ix *Index) Add(ctx context.Context, now time.Time, entries []Entry) (err error) {
	if len(entries) == 0 {
		return nil
	}
	defer ix.metrics.observe("add", time.Now(), &err)
	p, err := ix.plan(now.UnixMilli(), entries)
	if err != nil {
		return err
	}
	b := ix.newBatch()
	for c := range slices.Chunk(p.segments, MaxArgs/2) {
		b.add(ctx, func(pl redis.Pipeliner) { pl.ZAdd(ctx, ix.registry, c...) })
	}
	for _, g := range p.groups {
		for c := range slices.Chunk(g.members, MaxArgs/2) {
			b.add(ctx, func(pl redis.Pipeliner) { pl.ZAdd(ctx, g.key, c...) })
		}
	}
	if err := b.flush(ctx); err != nil {
		return fmt.Errorf("zset: add %d entries: %w", len(entries), err)
	}
	return nil
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

// Due returns up to limit members of key with score <= until, lowest score
// first (ZRANGEBYSCORE key -inf until LIMIT 0 limit WITHSCORES). limit <= 0
// means DefaultDueLimit; it is capped at MaxArgs.
func (ix *Index) Due(ctx context.Context, key string, until int64, limit int) (entries []Entry, err error) {
	defer ix.metrics.observe("due", time.Now(), &err)
	if limit <= 0 {
		limit = DefaultDueLimit
	}
	limit = min(limit, MaxArgs)
	zs, err := ix.client.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(until, 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("zset: due %s: %w", key, err)
	}
	entries = make([]Entry, 0, len(zs))
	for _, z := range zs {
		m, _ := z.Member.(string)
		id, perr := strconv.ParseUint(m, 10, 64)
		if perr != nil {
			return nil, fmt.Errorf("%w: %s holds %q", ErrBadMember, key, m)
		}
		entries = append(entries, Entry{ID: id, ExecAt: int64(z.Score)})
	}
	return entries, nil
}

// Remove deletes exactly the given members from key (ZREM), in commands of
// at most MaxArgs members, pipelined.
func (ix *Index) Remove(ctx context.Context, key string, entries []Entry) (err error) {
	if len(entries) == 0 {
		return nil
	}
	defer ix.metrics.observe("remove", time.Now(), &err)
	b := ix.newBatch()
	for c := range slices.Chunk(entries, MaxArgs) {
		members := make([]any, len(c))
		for i, e := range c {
			members[i] = strconv.FormatUint(e.ID, 10)
		}
		b.add(ctx, func(pl redis.Pipeliner) { pl.ZRem(ctx, key, members...) })
	}
	if err := b.flush(ctx); err != nil {
		return fmt.Errorf("zset: remove %d from %s: %w", len(entries), key, err)
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

// Pending reports whether e is still indexed: its member is in a zset of
// its own segment, or of a later registered segment that had started by now
// (where Add puts overdue entries), with score e.ExecAt.
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
	shard, member := ix.shard(e.ID), strconv.FormatUint(e.ID, 10)
	for c := range slices.Chunk(names, MaxPipeline) {
		pl := ix.client.Pipeline()
		cmds := make([]*redis.FloatCmd, len(c))
		for i, name := range c {
			cmds[i] = pl.ZScore(ctx, ix.key(name, shard), member)
		}
		if _, err := pl.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return false, fmt.Errorf("zset: pending %d: %w", e.ID, err)
		}
		for _, cmd := range cmds {
			score, err := cmd.Result()
			if err == nil && int64(score) == e.ExecAt {
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

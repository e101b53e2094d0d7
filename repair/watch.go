package repair

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// Defaults of WatchConfig.
const (
	DefaultInterval   = 5 * time.Second
	DefaultLookback   = time.Minute
	DefaultMargin     = 3 * time.Second
	DefaultLockExpiry = 30 * time.Second
	DefaultFailover   = 2 * time.Minute
	DefaultProbe      = time.Second
)

// WatchConfig configures a Watcher. Prefix is the index's key prefix; the
// zero value of every other field means its default.
type WatchConfig struct {
	// Prefix is the Redis key prefix of the index (delayd --redis-prefix).
	Prefix string
	// Interval is how often the marker is checked (default 5 s); the first
	// check is at Run's start.
	Interval time.Duration
	// Lookback is how far before the detected loss the repair starts
	// (default 1 min): tasks that had fallen due and were not delivered
	// yet when the index was lost. When this process looked at the index
	// before the loss (every check does), the repair starts at the oldest
	// entry then due if that is earlier, and leaves out the tasks that
	// look showed delivered (Settled); a task it cannot tell is delivered
	// again (counted by delayq_repair_overdue_total).
	Lookback time.Duration
	// MaxDelay is the longest accepted delay (delayd --max-delay, default
	// payload.DefaultMaxDelay): the repair reaches that far past the loss.
	MaxDelay time.Duration
	// Margin is how far producer clocks (the record times of the input)
	// may be off delayd's (default 3 s): tasks recorded after detection +
	// Margin were indexed in the new index by ingest, tasks recorded before
	// watermark − Margin were stored when the index was last looked at.
	Margin time.Duration
	// Failover is how far before its detection a loss seen by a changed
	// replication id (a failover or a restart) may have started (default
	// 2 min): when no probe tells more (see lostSince), such a repair
	// only indexes tasks recorded since then, the last writes a failover
	// or a restart can lose.
	Failover time.Duration
	// Probe is how often the probe is written between two checks
	// (default 1 s; every check writes one too): a failover or restart
	// repair re-indexes the tasks recorded since the watermark the last
	// surviving probe followed, so the older that probe, the more
	// duplicates. No more often than Interval when larger.
	Probe time.Duration
	// LockExpiry is the repair lock's expiry, extended while the repair
	// runs (default 30 s): a process that dies mid-repair hands it over
	// after that.
	LockExpiry time.Duration
	// FlagTTL is how long the op flags the repair sets again live: the op
	// lifetime, delayd's --max-delay + --retention (default MaxDelay + 7
	// days).
	FlagTTL time.Duration
	// NewIndex says that the index and the store start out empty together
	// (delayd --embedded: an in-process Redis and the in-memory store):
	// the first check that finds no marker records a new generation
	// instead of detecting a loss, since nothing can have been lost. A
	// loss after that (a FLUSHALL of that Redis) is detected as usual.
	NewIndex bool
	// BatchSize and Checkers go to Config.
	BatchSize, Checkers int
	Logger              *slog.Logger
	Metrics             *Metrics
}

func (c *WatchConfig) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Interval, DefaultInterval)
	def(&c.Lookback, DefaultLookback)
	def(&c.MaxDelay, payload.DefaultMaxDelay)
	def(&c.Margin, DefaultMargin)
	def(&c.LockExpiry, DefaultLockExpiry)
	def(&c.Failover, DefaultFailover)
	def(&c.Probe, DefaultProbe)
	def(&c.FlagTTL, c.MaxDelay+7*24*time.Hour)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every invalid field at once.
func (c WatchConfig) Validate() error {
	var errs []error
	if c.Prefix == "" {
		errs = append(errs, fmt.Errorf("%w: empty prefix", ErrConfig))
	}
	for name, d := range map[string]time.Duration{
		"interval": c.Interval, "lookback": c.Lookback, "max delay": c.MaxDelay, "margin": c.Margin, "failover": c.Failover, "probe": c.Probe, "flag ttl": c.FlagTTL,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%w: %s %v is negative", ErrConfig, name, d))
		}
	}
	if c.LockExpiry < time.Second {
		errs = append(errs, fmt.Errorf("%w: lock expiry %v is under 1s", ErrConfig, c.LockExpiry))
	}
	return errors.Join(errs...)
}

// WatchStore is what a Watcher reads from the payload store.
type WatchStore interface {
	Store
	OpScanner
}

// WatchIndex is what a Watcher reads from and writes into the index
// (zset.Index).
type WatchIndex interface {
	Index
	Flagger
	// Earliest is the lowest exec_at in [from, until] still indexed.
	Earliest(ctx context.Context, from, until int64) (int64, bool, error)
	Marks(ctx context.Context) (map[string]int64, error)
}

// Causes of a loss (Marker.Cause, the cause label of
// delayq_repair_loss_detected_total).
const (
	causeGeneration = "generation" // the marker's id is gone: a new, flushed or wiped Redis
	causeReplID     = "replid"     // a replica of the old master was promoted: a failover
	causeRestart    = "restart"    // a master restarted from its files: its last writes may be gone
)

// Watcher detects that the Redis index lost data and repairs it from the
// store. Every delayd runs one; a redsync lock lets one repair at a time.
type Watcher struct {
	cfg    WatchConfig
	client redis.UniversalClient
	gen    *Generation
	rs     *redsync.Redsync
	store  WatchStore
	ix     WatchIndex
	log    *slog.Logger
	failed bool // the last check failed (a WARN was logged)
	// fresh is WatchConfig.NewIndex until a check read the marker.
	fresh bool
	// settled is the last look at the index before a loss (Settled);
	// zero until one was taken.
	settled Settled
	// seen is when a check last found the marker's masters unchanged
	// (unix ms; 0 before): a failover or restart came after it.
	seen int64
	// replID is the masters' replication ids the last check found
	// unchanged (unchanged; false when it found a loss, or none ran): the
	// probes written between checks count only while they stay the same.
	replID    string
	unchanged bool
	// probeKey is this process's probe ({prefix}:probe:{random}); probes
	// are the last values it wrote there, each with the ingest
	// watermarks read just before (see probe).
	probeKey string
	probeN   int64
	probes   []probed
}

// probed is one write of the probe: its value n and the lowest ingest
// watermarks read before it, of delay-input (stored) and of
// delay-input-slow (slow; 0: none published, an ingest older than the
// slow topic's watermarks or no lane of it).
type probed struct{ n, stored, slow int64 }

// Probes kept, and how long a probe key outlives its last write.
const (
	probesKept = 64
	probeTTL   = time.Hour
)

// NewWatcher returns a Watcher of the index ix on client, repairing from
// store.
func NewWatcher(cfg WatchConfig, client redis.UniversalClient, store WatchStore, ix WatchIndex) (*Watcher, error) {
	cfg.setDefaults()
	err := cfg.Validate()
	if client == nil || store == nil || ix == nil {
		err = errors.Join(err, fmt.Errorf("%w: nil client, store or index", ErrConfig))
	}
	if err != nil {
		return nil, err
	}
	return &Watcher{
		cfg: cfg, client: client, store: store, ix: ix,
		gen: NewGeneration(client, cfg.Prefix), probeKey: cfg.Prefix + ":probe:" + newID(),
		rs:    redsync.New(goredis.NewPool(client)),
		log:   cfg.Logger.With("component", "repair"),
		fresh: cfg.NewIndex,
	}, nil
}

// Interval returns how often the watcher checks (WatchConfig.Interval
// with its default).
func (w *Watcher) Interval() time.Duration { return w.cfg.Interval }

// Run checks at once and then every Interval until ctx ends, and writes
// a probe every Probe between checks (probeBetween); a failed check
// (Redis or HBase down) is retried at the next one. It returns nil when
// ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	every := min(w.cfg.Probe, w.cfg.Interval)
	t := time.NewTicker(every)
	defer t.Stop()
	next := time.Now()
	for {
		if now := time.Now(); now.Before(next) {
			// Between checks: a failure shows at the next check.
			_ = w.probeBetween(ctx)
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			continue
		}
		// Ticks of a check that overran are dropped by the ticker.
		next = time.Now().Add(w.cfg.Interval - every/2)
		_, err := w.Check(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !w.failed:
			w.failed = true
			w.log.Warn("index loss check failed, retrying", "err", err, "every", w.cfg.Interval)
		case err == nil && w.failed:
			w.failed = false
			w.log.Info("index loss check recovered")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Check looks at the generation marker and the replication id once and,
// when they show a loss, repairs it unless another process holds the
// repair lock. It reports whether this call completed a repair.
func (w *Watcher) Check(ctx context.Context) (bool, error) {
	w.unchanged = false
	m, err := w.gen.Read(ctx)
	if err != nil {
		return false, err
	}
	repl, err := ReplID(ctx, w.client)
	if err != nil {
		return false, err
	}
	replID := repl.ID
	if w.fresh && m.ID == "" && m.Lost == 0 {
		// A new index beside an empty store: nothing to repair.
		if err := w.gen.Init(ctx, replID, time.Now()); err != nil {
			return false, err
		}
		w.fresh = false
		return false, nil
	}
	w.fresh = false
	if m.Lost == 0 {
		cause := repl.lossSince(m.ReplID)
		switch {
		case m.ID == "":
			cause = causeGeneration
		case cause != "":
		case replID != m.ReplID:
			// First seen, or a master added to a Redis Cluster.
			return false, w.gen.SetReplID(ctx, replID)
		default:
			w.seen = time.Now().UnixMilli()
			w.replID, w.unchanged = replID, true
			return false, w.sample(ctx, m)
		}
		if m, err = w.gen.MarkLost(ctx, time.Now().UnixMilli(), cause); err != nil {
			return false, err
		}
		w.cfg.Metrics.lossDetected(cause)
		w.log.Warn("redis index lost data, repairing it from hbase",
			"cause", m.Cause, "key", w.gen.Key(), "old_replid", m.ReplID, "replid", replID)
	}
	return w.repair(ctx, m, replID)
}

// sample looks at what the index holds due (the oldest due entry) and at
// how far ingest has stored its input (the watermarks), and keeps it as
// settled if the marker m is still the same afterwards: then the look
// was taken before any loss.
func (w *Watcher) sample(ctx context.Context, m Marker) error {
	now := time.Now().UnixMilli()
	stored, slow, err := w.watermarks(ctx)
	if err != nil {
		return err
	}
	if stored == 0 {
		return nil // no ingest has published yet: nothing known
	}
	oldest, found, err := w.ix.Earliest(ctx, 0, now)
	if err != nil {
		return fmt.Errorf("repair: oldest due entry: %w", err)
	}
	if !found {
		oldest = now
	}
	after, err := w.gen.Read(ctx)
	if err != nil {
		return err
	}
	repl, err := ReplID(ctx, w.client)
	if err != nil {
		return err
	}
	if after != m || repl.ID != m.ReplID {
		return nil // flushed or failed over while looking: the next check decides
	}
	w.settled = Settled{Before: oldest, RecordedBefore: min(stored, now) - w.cfg.Margin.Milliseconds()}
	return w.probe(ctx, min(stored, now), min(slow, now), m.ReplID)
}

// watermarks returns the lowest ingest watermark published for
// delay-input (stored) and for delay-input-slow (slow), 0 for a topic
// with none.
func (w *Watcher) watermarks(ctx context.Context) (stored, slow int64, err error) {
	marks, err := w.ix.Marks(ctx)
	if err != nil {
		return 0, 0, err
	}
	for field, mark := range marks {
		switch {
		case strings.HasPrefix(field, topics.Input+"/") && (stored == 0 || mark < stored):
			stored = mark
		case strings.HasPrefix(field, topics.Slow+"/") && (slow == 0 || mark < slow):
			slow = mark
		}
	}
	return stored, slow, nil
}

// probeBetween writes a probe between two checks, after reading the
// watermarks, while the last check found the masters unchanged and they
// still are: a probe a second old at the loss, not a check's Interval,
// bounds what a failover or restart repair re-delivers. Any failure or
// change stops the probes until a check finds the masters unchanged: a
// value written to a restarted or promoted master would overwrite the
// one that tells what survived.
func (w *Watcher) probeBetween(ctx context.Context) (err error) {
	if _, cluster := w.client.(*redis.ClusterClient); cluster || !w.unchanged {
		return nil
	}
	defer func() {
		if err != nil {
			w.unchanged = false
		}
	}()
	now := time.Now().UnixMilli()
	stored, slow, err := w.watermarks(ctx)
	if err != nil || stored == 0 {
		return err
	}
	if repl, err := ReplID(ctx, w.client); err != nil || repl.ID != w.replID {
		w.unchanged = false
		return err
	}
	return w.probe(ctx, min(stored, now), min(slow, now), w.replID)
}

// probe writes the next value of this process's probe key, after the
// watermarks stored (delay-input) and slow (delay-input-slow, 0: none)
// were read: every index write of the tasks recorded before them was
// acknowledged before the probe was. Redis keeps its
// writes in order (the AOF, the replication stream), so after a restart
// or a failover, the probe value found tells which of those writes
// survived (survivedBefore). That holds only for a value the master of
// replication id replID wrote: a probe the masters' ids no longer match
// after it is written (a failover or restart in between) is forgotten.
// On a Redis Cluster the index spans masters the probe's key does not
// live on: no probe.
func (w *Watcher) probe(ctx context.Context, stored, slow int64, replID string) error {
	if _, cluster := w.client.(*redis.ClusterClient); cluster {
		return nil
	}
	w.probeN++ // never written twice: a forgotten value must not stand for a later one
	n := w.probeN
	if err := w.client.Set(ctx, w.probeKey, n, probeTTL).Err(); err != nil {
		return fmt.Errorf("repair: write probe %s: %w", w.probeKey, err)
	}
	if repl, err := ReplID(ctx, w.client); err != nil || repl.ID != replID {
		w.unchanged = false
		return err // a changed master: the next check decides
	}
	if len(w.probes) == probesKept {
		w.probes = slices.Delete(w.probes, 0, 1)
	}
	w.probes = append(w.probes, probed{n, stored, slow})
	return nil
}

// Bases of the failover and restart window (lostSince), the window key
// of the "index repair started" line.
const (
	windowProbe    = "probe"         // from the watermarks the surviving probe followed
	windowNoProbe  = "no_probe"      // no probe this process wrote survived: Failover back
	windowCluster  = "cluster"       // a Redis Cluster, where no probe is written: Failover back
	windowSlowMark = "slow_unmarked" // delay-input-slow had no watermark at the probe: Failover back, or the probe's when earlier
)

// lossEvidence is what a failover or restart repair knows of the loss.
type lossEvidence struct {
	// Lost is when the loss was detected, Seen when a check last found
	// the masters unchanged before it (0: none did), unix ms.
	Lost, Seen int64
	// Cluster: a Redis Cluster, where the probe does not apply.
	Cluster bool
	// Probe is the surviving probe's watermarks (Found: the new master
	// holds a value this process wrote and remembers).
	Probe probed
	Found bool
}

// lostSince returns the earliest record time of a task whose index write
// a failover or a restart can have taken, and what it is based on (a
// window* value). Redis applies a master's writes in order, in its AOF
// and in its replication stream: the new master holds the probe, so it
// holds every write acknowledged before it, among them the index writes
// of every task recorded before the watermarks read before the probe
// (less margin: producer clocks). Only tasks recorded since then can
// have lost theirs. Where the probe tells nothing the window reaches
// failover back from when this process last saw the old master up (a
// Redis away longer than that is still covered), or back to the probe's
// watermark when that is earlier: no probe survived, a Redis Cluster
// (the index spans masters the probe does not live on), or no watermark
// of delay-input-slow at the probe (its lanes index tasks recorded long
// before, and nothing says which).
func lostSince(e lossEvidence, failover, margin time.Duration) (int64, string) {
	lastUp := e.Lost
	if e.Seen != 0 {
		lastUp = min(lastUp, e.Seen)
	}
	fallback := lastUp - failover.Milliseconds()
	switch {
	case e.Cluster:
		return fallback, windowCluster
	case !e.Found || e.Probe.stored == 0:
		return fallback, windowNoProbe
	case e.Probe.slow == 0:
		return min(fallback, e.Probe.stored-margin.Milliseconds()), windowSlowMark
	}
	return min(e.Probe.stored, e.Probe.slow) - margin.Milliseconds(), windowProbe
}

// survivedBefore reads this process's probe after a failover or a
// restart and returns the watermarks its value followed: the index
// writes of every task recorded before them survived the loss. found is
// false when the probe tells nothing (none written, or the value found
// is not one this process remembers); p.n is the value found then (0:
// none), for the log.
func (w *Watcher) survivedBefore(ctx context.Context) (p probed, found bool, err error) {
	n, err := w.client.Get(ctx, w.probeKey).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return probed{}, false, nil
	case err != nil:
		return probed{}, false, fmt.Errorf("repair: read probe %s: %w", w.probeKey, err)
	}
	for _, p := range w.probes {
		if p.n == n {
			return p, true, nil
		}
	}
	return probed{n: n}, false, nil
}

// repair runs the repair of the loss m records under the repair lock.
func (w *Watcher) repair(ctx context.Context, m Marker, replID string) (bool, error) {
	mu := w.rs.NewMutex(w.cfg.Prefix+":repair:lock", redsync.WithTries(1), redsync.WithExpiry(w.cfg.LockExpiry))
	if err := mu.TryLockContext(ctx); err != nil {
		var taken *redsync.ErrTaken
		if errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed) {
			return false, nil // another process repairs
		}
		return false, fmt.Errorf("repair: lock: %w", err)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	extended := make(chan struct{})
	go func() {
		defer close(extended)
		t := time.NewTicker(w.cfg.LockExpiry / 3)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				if ok, err := mu.ExtendContext(rctx); !ok || err != nil {
					cancel(fmt.Errorf("repair: lock lost: %w", errors.Join(err, redsync.ErrExtendFailed)))
					return
				}
			}
		}
	}()
	defer func() {
		cancel(nil)
		<-extended
		_, _ = mu.UnlockContext(context.WithoutCancel(ctx))
	}()

	cfg := Config{
		From:      max(m.Lost-w.cfg.Lookback.Milliseconds(), 0),
		To:        m.Lost + w.cfg.MaxDelay.Milliseconds() + w.cfg.Margin.Milliseconds() + 1,
		Recorded:  Window{To: m.Lost + w.cfg.Margin.Milliseconds()},
		Unchecked: true, BatchSize: w.cfg.BatchSize, Checkers: w.cfg.Checkers, Metrics: w.cfg.Metrics,
	}
	window, probeFound, probeKept := "", int64(0), ""
	if len(w.probes) > 0 {
		probeKept = fmt.Sprintf("%d-%d", w.probes[0].n, w.probes[len(w.probes)-1].n)
	}
	if m.Cause == causeReplID || m.Cause == causeRestart {
		p, found, err := w.survivedBefore(ctx)
		probeFound = p.n
		if err != nil {
			return false, err
		}
		_, cluster := w.client.(*redis.ClusterClient)
		e := lossEvidence{Lost: m.Lost, Seen: w.seen, Cluster: cluster, Probe: p, Found: found}
		cfg.Recorded.From, window = lostSince(e, w.cfg.Failover, w.cfg.Margin)
	}
	if w.settled.Before != 0 {
		// Deliveries that were held, or fell behind, reach back further
		// than the lookback; everything before was delivered.
		cfg.From = max(min(cfg.From, w.settled.Before), 0)
		cfg.Settled = w.settled
	}
	w.log.Info("index repair started", "from", payload.FormatTime(cfg.From), "to", payload.FormatTime(cfg.To),
		"lost_at", payload.FormatTime(m.Lost), "cause", m.Cause, "recorded_from", payload.FormatTime(cfg.Recorded.From), "window", window, "probe", probeFound, "probes_kept", probeKept,
		"delivered_before", payload.FormatTime(cfg.Settled.Before), "stored_before", payload.FormatTime(cfg.Settled.RecordedBefore))
	done := w.cfg.Metrics.start()
	start := time.Now()
	stats, err := Run(rctx, cfg, w.store, w.ix)
	var flags int64
	if err == nil {
		flags, err = RebuildFlags(rctx, w.store, w.ix, w.cfg.FlagTTL)
	}
	done()
	took := time.Since(start)
	if err != nil {
		if c := context.Cause(rctx); c != nil && ctx.Err() == nil {
			err = c
		}
		w.log.Warn("index repair stopped, it starts again at the next check",
			"err", err, "scanned", stats.Scanned, "reindexed", stats.Reindexed, "took", took.Round(time.Millisecond))
		return false, err
	}
	healed, err := w.gen.Heal(ctx, m.Lost, replID, time.Now())
	if err != nil {
		return false, err
	}
	w.log.Info("index repair done", "scanned", stats.Scanned, "reindexed", stats.Reindexed, "overdue", stats.Overdue,
		"op_flags", flags, "present", stats.Present, "cancelled", stats.Cancelled, "moved", stats.Moved, "unrecorded", stats.Unrecorded, "delivered", stats.Delivered,
		"took", took.Round(time.Millisecond), "healed", healed)
	return healed, nil
}

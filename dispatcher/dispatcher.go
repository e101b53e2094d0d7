package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/fence"
	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/topics"
	"github.com/delayq/delayq/zset"
)

// Index is the part of the zset index the dispatcher uses.
type Index interface {
	DueGroups(ctx context.Context, until int64) ([]zset.Group, error)
	Retire(ctx context.Context, before int64) (int, error)
	Backlog(ctx context.Context) ([]zset.SegmentCount, error)
}

// Locker elects the winner of a tick (redlock.Locker on Redis).
type Locker interface {
	// TryLock makes one attempt at the lock name, held for expiry and
	// never released early. It reports false with a nil error when
	// another instance holds it, and an error when it could not ask.
	TryLock(ctx context.Context, name string, expiry time.Duration) (bool, error)
}

// Writer writes scan tasks; a kafka-go Writer without a Topic of its own
// satisfies it.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Config configures a Dispatcher. The zero value means the defaults.
type Config struct {
	// Tick is the dispatch period, a whole number of seconds, at least 1s.
	// Default 1m.
	Tick time.Duration
	// LockPrefix starts the lock names, "{LockPrefix}:dispatch:{unix}".
	// Default "delayq" (the zset prefix, so one deployment shares locks).
	LockPrefix string
	// RetireGrace is how long after its end a drained segment leaves the
	// registry. It must exceed the clock skew between instances. Default
	// max(2 ticks, 1m).
	RetireGrace time.Duration
	// ScanTopic receives the scan tasks. Default delay-scan.
	ScanTopic string
	// Lookahead is how far past its tick a scan task reaches: the tick at T
	// emits until = T + Lookahead, and the scanner delivers each entry when
	// its exec_at comes (never before), so a task is late by the processing
	// time rather than by up to one tick. Default Tick; negative: none
	// (until = T, late by up to one tick).
	Lookahead time.Duration
	// BacklogEvery is the period of the pending_tasks gauge: the winner of
	// the first tick of every period refreshes it (zset's Maintenance.Backlog
	// reads the registry and per-segment counts: a few commands per
	// thousands of segments). Default max(Tick, 1m); negative turns the
	// gauge off.
	BacklogEvery time.Duration
	// Backoff bounds the waits between retries of a won tick's calls while
	// Redis or Kafka is down; they go on until the tick's time is up.
	// Defaults of package retry (100ms doubling to 5s).
	Backoff retry.Backoff
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer for the dispatcher metrics; nil does not register them.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.Tick == 0 {
		c.Tick = time.Minute
	}
	if c.LockPrefix == "" {
		c.LockPrefix = zset.DefaultPrefix
	}
	if c.RetireGrace == 0 {
		c.RetireGrace = max(2*c.Tick, time.Minute)
	}
	if c.ScanTopic == "" {
		c.ScanTopic = topics.Scan
	}
	if c.BacklogEvery == 0 {
		c.BacklogEvery = max(c.Tick, time.Minute)
	}
	switch {
	case c.Lookahead == 0:
		c.Lookahead = c.Tick
	case c.Lookahead < 0:
		c.Lookahead = 0
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// ErrConfig is wrapped by the errors of Config.Validate and New.
var ErrConfig = errors.New("dispatcher: invalid config")

// Validate reports every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if c.Tick < time.Second || c.Tick%time.Second != 0 {
		bad("tick %v: want whole seconds, at least 1s", c.Tick)
	}
	if c.RetireGrace < 0 {
		bad("negative retire grace %v", c.RetireGrace)
	}
	if topics.Internal(c.ScanTopic) && c.ScanTopic != topics.Scan {
		bad("scan topic %q is another internal topic", c.ScanTopic)
	}
	return errors.Join(errs...)
}

// Dispatcher emits scan tasks at every tick it wins.
type Dispatcher struct {
	cfg        Config
	ix         Index
	locker     Locker
	w          Writer
	log        *slog.Logger
	metrics    *metrics
	stage      *retry.Stage
	lockExpiry time.Duration
	work       time.Duration // time limit of a won tick
}

// New returns a Dispatcher over the index ix, electing a winner per tick
// with locker and writing scan tasks with w.
func New(cfg Config, ix Index, locker Locker, w Writer) (*Dispatcher, error) {
	cfg.setDefaults()
	err := cfg.Validate()
	if ix == nil || locker == nil || w == nil {
		err = errors.Join(err, fmt.Errorf("%w: nil index, locker or writer", ErrConfig))
	}
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	stage, err := retry.NewStage("dispatcher", cfg.Logger, cfg.Registerer)
	if err != nil {
		return nil, err
	}
	expiry := cfg.Tick + max(cfg.Tick, 30*time.Second)
	return &Dispatcher{
		cfg:        cfg,
		ix:         ix,
		locker:     locker,
		w:          w,
		log:        cfg.Logger.With("component", "dispatcher"),
		metrics:    m,
		stage:      stage,
		lockExpiry: expiry,
		work:       max(cfg.Tick, 10*time.Second),
	}, nil
}

// Run dispatches at every tick until ctx is done, then returns nil. A tick
// that fails is logged and counted; the next tick covers it.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.log.Info("dispatcher started", "tick", d.cfg.Tick.String(), "scan_topic", d.cfg.ScanTopic)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := d.nextTick(time.Now())
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			d.log.Info("dispatcher stopped")
			return nil
		case <-timer.C:
		}
		d.tick(ctx, next)
	}
}

// nextTick returns the first multiple of Tick after now.
func (d *Dispatcher) nextTick(now time.Time) time.Time {
	tick := d.cfg.Tick.Milliseconds()
	ms := now.UnixMilli()
	return time.UnixMilli((ms/tick + 1) * tick)
}

// lockName is the mutex of the tick at `at`.
func (d *Dispatcher) lockName(at time.Time) string {
	return d.cfg.LockPrefix + ":dispatch:" + strconv.FormatInt(at.Unix(), 10)
}

// tick makes one attempt at the lock of the tick at `at` and, when it wins,
// emits scan tasks, retires segments and refreshes the backlog gauge. It
// returns the result it counted. While Redis or Kafka is down the attempt
// and the emit are retried (one WARN when the stall starts, one INFO when
// it ends) until the tick's time is up; a tick that runs out loses nothing,
// the next one lists the same zsets.
func (d *Dispatcher) tick(ctx context.Context, at time.Time) string {
	ctx, cancel := context.WithTimeout(ctx, d.work)
	defer cancel()
	log := d.log.With("tick", at.Unix())
	backlog := d.backlogTick(at)
	policy := retry.Policy{Backoff: d.cfg.Backoff}
	if err := d.check(ctx, d.turn(at, time.Now()), writeEmit); err != nil {
		// The timer fired after the tick's turn (the process was paused,
		// or starved): the next tick is another instance's to win.
		log.Info("tick skipped: its turn ended before its lock was asked for", "err", err)
		d.metrics.ticks.WithLabelValues(resultError).Inc()
		return resultError
	}
	var (
		won  bool
		turn fence.Until // the fence of the tick's writes
	)
	err := d.stage.Do(ctx, "lock", policy, func(ctx context.Context) (err error) {
		turn = d.turn(at, time.Now())
		won, err = d.locker.TryLock(ctx, d.lockName(at), d.lockExpiry)
		return err
	})
	if err == nil && !won {
		d.metrics.ticks.WithLabelValues(resultLost).Inc()
		if backlog {
			d.metrics.pending.Reset() // the winner exports it now
		}
		return resultLost
	}
	// The lock is never released: it expires after the tick, so no other
	// instance can win this tick late.
	if err == nil {
		start := time.Now()
		emit := policy
		emit.Permanent = func(err error) bool { return errors.Is(err, fence.ErrFenced) }
		err = d.stage.Do(ctx, "emit", emit, func(ctx context.Context) error {
			n, err := d.emit(ctx, turn, at.Add(d.cfg.Lookahead).UnixMilli())
			if err == nil && n > 0 {
				log.Debug("dispatched", "scan_tasks", n)
			}
			return err
		})
		d.observe(phaseEmit, start)
	}
	if errors.Is(err, fence.ErrFenced) {
		// Paused past the tick's turn: another instance may emit the next
		// tick now; this one writes nothing more for its own.
		log.Info("tick fenced: its turn ended before its writes, the next tick covers it", "err", err)
		d.metrics.ticks.WithLabelValues(resultError).Inc()
		return resultError
	}
	if err != nil {
		log.Debug("tick given up, the next tick covers it", "err", err)
		d.metrics.ticks.WithLabelValues(resultError).Inc()
		return resultError
	}
	d.metrics.ticks.WithLabelValues(resultWon).Inc()

	start := time.Now()
	var retired int
	if err = d.check(ctx, turn, writeRetire); err == nil {
		retired, err = d.ix.Retire(ctx, at.Add(-d.cfg.RetireGrace).UnixMilli())
	}
	d.observe(phaseRetire, start)
	if err != nil {
		log.Warn("retire failed", "err", err)
	} else if retired > 0 {
		log.Debug("segments retired", "segments", retired)
	}
	if backlog {
		start := time.Now()
		err := d.refreshBacklog(ctx, at)
		d.observe(phaseBacklog, start)
		if err != nil {
			d.metrics.pending.Reset()
			log.Warn("backlog failed", "err", err)
		}
	}
	return resultWon
}

// observe records the time of one phase of a won tick that began at start.
func (d *Dispatcher) observe(phase string, start time.Time) {
	d.metrics.seconds.WithLabelValues(phase).Observe(time.Since(start).Seconds())
}

// backlogTick reports whether the tick at `at` refreshes the backlog gauge:
// the first tick of every BacklogEvery period (counted from the epoch).
// Its winner refreshes, the other instances drop their series, so at any
// time one instance exports pending_tasks and sum() over instances is right.
func (d *Dispatcher) backlogTick(at time.Time) bool {
	every := d.cfg.BacklogEvery.Milliseconds()
	return every > 0 && at.UnixMilli()%every < d.cfg.Tick.Milliseconds()
}

// turn is the fence of the writes of the tick at `at` whose lock was
// asked for at start (read before the call, so it carries the monotonic
// clock): valid until the next tick, when another instance may win and
// emit, and never past the lock's expiry. A dispatcher paused between
// winning and writing (a long GC, a frozen VM, SIGSTOP) wakes past it
// and writes nothing for a tick whose turn has passed; a wall-clock step
// does not move it.
func (d *Dispatcher) turn(at, start time.Time) fence.Until {
	left := min(at.Add(d.cfg.Tick).Sub(start), d.lockExpiry)
	return fence.Until(start.Add(left))
}

// check checks the fence of a tick's write and counts a refusal.
func (d *Dispatcher) check(ctx context.Context, turn fence.Until, write string) error {
	err := turn.Check(ctx)
	if err != nil {
		d.metrics.fenced.WithLabelValues("dispatcher", write).Inc()
	}
	return err
}

// emit writes one scan task per due group of zsets (zset.Group) in one
// batch, checking the tick's fence right before, and returns how many.
func (d *Dispatcher) emit(ctx context.Context, turn fence.Until, until int64) (int, error) {
	groups, err := d.ix.DueGroups(ctx, until)
	if err != nil {
		return 0, fmt.Errorf("dispatcher: due keys: %w", err)
	}
	if len(groups) == 0 {
		return 0, nil
	}
	msgs := make([]kafka.Message, len(groups))
	now := time.Now() // kafka-go sends timestamp 0 for a zero Time
	for i, g := range groups {
		msgs[i] = scanTask(g, until).Message()
		msgs[i].Topic = d.cfg.ScanTopic
		msgs[i].Time = now
	}
	if err := d.check(ctx, turn, writeEmit); err != nil {
		return 0, err
	}
	if err := d.w.WriteMessages(ctx, msgs...); err != nil {
		return 0, fmt.Errorf("dispatcher: write %d scan tasks: %w", len(msgs), err)
	}
	d.metrics.emitted.Add(float64(len(msgs)))
	return len(msgs), nil
}

// scanTask returns the scan task of g: its head and its other due zsets.
func scanTask(g zset.Group, until int64) scantask.Task {
	t := scantask.Task{Zset: g.Head, Until: until}
	for _, k := range g.Due {
		if k != g.Head {
			t.More = append(t.More, k)
		}
	}
	return t
}

// refreshBacklog sets the pending_tasks gauge from the index backlog,
// bucketed by how far from now each segment ends.
func (d *Dispatcher) refreshBacklog(ctx context.Context, now time.Time) error {
	segs, err := d.ix.Backlog(ctx)
	if err != nil {
		return fmt.Errorf("dispatcher: backlog: %w", err)
	}
	counts := bucketize(segs, now.UnixMilli())
	for i, b := range dueBuckets {
		d.metrics.pending.WithLabelValues(b).Set(float64(counts[i]))
	}
	return nil
}

// bucketize sums the pending counts per due bucket: overdue for segments
// that ended at or before now, then by how soon they end.
func bucketize(segs []zset.SegmentCount, now int64) []int64 {
	counts := make([]int64, len(dueBuckets))
	for _, s := range segs {
		left := time.Duration(s.End-now) * time.Millisecond
		var i int
		switch {
		case left <= 0:
			i = 0
		case left <= time.Minute:
			i = 1
		case left <= time.Hour:
			i = 2
		case left <= 24*time.Hour:
			i = 3
		default:
			i = 4
		}
		counts[i] += s.Pending
	}
	return counts
}

package watermark

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
)

// Source reads the watermarks ingest published, by Field.
type Source interface {
	Marks(ctx context.Context) (map[string]int64, error)
}

// Follower follows the watermarks of the input topic's partitions and
// tells the scanner how far it may deliver. It is safe for concurrent use.
type Follower struct {
	cfg     Config
	src     Source
	log     *slog.Logger
	lag     prometheus.Gauge
	held    prometheus.Gauge
	horizon atomic.Int64 // unix ms; deliveries up to it are allowed

	// Owned by Run.
	ignored   map[string]bool // fields more than MaxHold behind
	heldSince time.Time       // zero while nothing is held
}

// NewFollower returns a Follower of the watermarks src reads. It holds
// every delivery until its first read: call Run.
func NewFollower(cfg Config, src Source, log *slog.Logger, reg prometheus.Registerer) (*Follower, error) {
	cfg.setDefaults()
	err := cfg.Validate()
	if src == nil {
		err = errors.Join(err, fmt.Errorf("%w: nil source", ErrConfig))
	}
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	f := &Follower{
		cfg: cfg,
		src: src,
		log: log.With("component", "watermark"),
		lag: metric.Register(reg, &errs, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "delayq_ingest_watermark_lag_seconds",
			Help: "How far the slowest delay-input partition's ingest watermark trails now.",
		})),
		held: metric.Register(reg, &errs, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "delayq_delivery_held",
			Help: "1 while deliveries wait for ingest to catch up with cancels queued in delay-input.",
		})),
		ignored: map[string]bool{},
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("watermark: metrics: %w", err)
	}
	return f, nil
}

// Cutoff returns the latest exec_at (unix ms) that may be delivered at now:
// now itself unless ingest trails by more than Lead.
func (f *Follower) Cutoff(now int64) int64 {
	return min(now, f.horizon.Load())
}

// Poll is how often the watermarks are read: a held delivery is looked at
// again after it.
func (f *Follower) Poll() time.Duration { return f.cfg.Poll }

// Run reads the watermarks every Poll until ctx ends. While they cannot be
// read (Redis down) the last horizon stands: it can only be too careful.
func (f *Follower) Run(ctx context.Context) {
	t := time.NewTicker(f.cfg.Poll)
	defer t.Stop()
	for {
		marks, err := f.src.Marks(ctx)
		if err == nil {
			f.update(marks, time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// update sets the horizon from marks read at now.
func (f *Follower) update(marks map[string]int64, now time.Time) {
	nowMs := now.UnixMilli()
	floor := nowMs - f.cfg.MaxHold.Milliseconds()
	low, lowField := int64(math.MaxInt64), ""
	for field, w := range marks {
		topic, _, ok := parseField(field)
		if !ok || topic != f.cfg.Topic {
			continue
		}
		if w < floor {
			if !f.ignored[field] {
				f.ignored[field] = true
				f.log.Warn("ingest watermark too far behind, deliveries no longer wait for it; a cancel queued there may lose to its task",
					"partition", field, "behind", time.Duration(nowMs-w)*time.Millisecond, "max_hold", f.cfg.MaxHold)
			}
			continue
		}
		if f.ignored[field] {
			delete(f.ignored, field)
			f.log.Info("ingest watermark back within the max hold", "partition", field)
		}
		if w < low {
			low, lowField = w, field
		}
	}
	horizon := int64(math.MaxInt64)
	if lowField != "" {
		horizon = low + f.cfg.Lead.Milliseconds()
		f.lag.Set(max(float64(nowMs-low)/1e3, 0))
	} else {
		f.lag.Set(0)
	}
	f.horizon.Store(horizon)
	switch held := horizon < nowMs; {
	case held && f.heldSince.IsZero():
		f.heldSince = now
		f.held.Set(1)
		f.log.Warn("deliveries held until ingest catches up with delay-input (cancels may be queued there)",
			"partition", lowField, "behind", time.Duration(nowMs-low)*time.Millisecond)
	case !held && !f.heldSince.IsZero():
		f.log.Info("deliveries no longer held", "held_for", now.Sub(f.heldSince).Round(time.Millisecond))
		f.heldSince = time.Time{}
		f.held.Set(0)
	}
}

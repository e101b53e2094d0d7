package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
)

// Defaults of Backoff.
const (
	DefaultBase = 100 * time.Millisecond
	DefaultMax  = 5 * time.Second
)

// Backoff is capped exponential backoff with jitter. Zero fields mean the
// defaults.
type Backoff struct {
	Base time.Duration // wait after the first failure; default 100ms
	Max  time.Duration // cap of any wait; default 5s
}

// Delay returns the wait after the attempt-th consecutive failure (from 1):
// Base·2^(attempt−1) capped at Max, then drawn uniformly from its upper half
// so that many callers failing together do not retry in lockstep.
func (b Backoff) Delay(attempt int) time.Duration {
	base, ceil := b.Base, b.Max
	if base <= 0 {
		base = DefaultBase
	}
	if ceil <= 0 {
		ceil = max(DefaultMax, base)
	}
	d := base
	for i := 1; i < attempt && d < ceil; i++ {
		d *= 2
	}
	d = min(d, ceil)
	return d/2 + rand.N(d/2+1)
}

// Sleep waits for d or until ctx ends, and returns ctx's cause in that case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Policy says how Do retries one kind of call.
type Policy struct {
	Backoff
	// CallTimeout bounds each call; 0 leaves it to ctx.
	CallTimeout time.Duration
	// Permanent reports errors that no retry can cure; Do returns them at
	// once. Nil: every error is transient.
	Permanent func(error) bool
	// Idle is for calls that wait for input as long as it takes (a Kafka
	// fetch): once such a call failed, a retry that waits Idle without an
	// error shows that the dependency answers again, only with nothing to
	// give. The stall then ends (and is logged as recovered) and the call
	// goes on waiting, without the bound. 0: off.
	Idle time.Duration
}

// Stage tracks the retries of one pipeline stage (see the package doc).
type Stage struct {
	name string
	log  *slog.Logger

	stalled prometheus.Gauge
	seconds prometheus.Counter
	retries *prometheus.CounterVec

	mu      sync.Mutex
	failing int       // calls of Do between their first failure and their end
	since   time.Time // when failing went from 0 to 1
}

// NewStage returns the Stage of the named stage ("ingest", "scanner",
// "dispatcher", …). A nil log discards the lines; a nil reg registers no
// metrics.
func NewStage(name string, log *slog.Logger, reg prometheus.Registerer) (*Stage, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	stalled := metric.Register(reg, &errs, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "delayq_stage_stalled",
		Help: "1 while a call of the stage is failing and being retried (a dependency is down or slow).",
	}, []string{"stage"}))
	seconds := metric.Register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "delayq_stage_stall_seconds_total",
		Help: "Time the stage spent stalled, retrying a failing dependency.",
	}, []string{"stage"}))
	retries := metric.Register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "delayq_stage_retries_total",
		Help: "Failed calls of the stage that were retried, by operation.",
	}, []string{"stage", "op"}))
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("retry: register metrics of %s: %w", name, err)
	}
	return &Stage{
		name:    name,
		log:     log,
		stalled: stalled.WithLabelValues(name),
		seconds: seconds.WithLabelValues(name),
		retries: retries.MustCurryWith(prometheus.Labels{"stage": name}),
	}, nil
}

// Do calls fn until it returns nil, an error p.Permanent accepts, or ctx
// ends, waiting p's backoff between calls. It returns nil, the permanent
// error, or an error wrapping both ctx's cause and fn's last error. op names
// the call in logs and metrics ("put", "zadd", "write", …).
func (s *Stage) Do(ctx context.Context, op string, p Policy, fn func(context.Context) error) error {
	stalling := false
	defer func() {
		if stalling {
			s.leave(op, false)
		}
	}()
	for attempt := 1; ; attempt++ {
		timeout := p.CallTimeout
		idle := stalling && p.Idle > 0 && (timeout <= 0 || p.Idle < timeout)
		if idle {
			timeout = p.Idle
		}
		err := call(ctx, timeout, fn)
		if idle && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			stalling = false
			s.leave(op, true)
			attempt = 0
			continue
		}
		switch {
		case err == nil:
			if stalling {
				stalling = false
				s.leave(op, true)
			}
			return nil
		case p.Permanent != nil && p.Permanent(err):
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w (last error: %w)", op, context.Cause(ctx), err)
		}
		if !stalling {
			stalling = true
			s.enter(op, err)
		}
		if s != nil {
			s.retries.WithLabelValues(op).Inc()
		}
		if serr := Sleep(ctx, p.Delay(attempt)); serr != nil {
			return fmt.Errorf("%s: %w (last error: %w)", op, serr, err)
		}
	}
}

func call(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error {
	if timeout <= 0 {
		return fn(ctx)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fn(cctx)
}

// enter counts a call that started failing; the first one logs the stall.
func (s *Stage) enter(op string, err error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing++
	if s.failing > 1 {
		return
	}
	s.since = time.Now()
	s.stalled.Set(1)
	s.log.Warn("stage stalled, retrying until the dependency answers", "stage", s.name, "op", op, "err", err)
}

// leave counts a failing call that ended; the last one ends the stall and,
// when it ended by succeeding, logs the recovery.
func (s *Stage) leave(op string, recovered bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing--
	if s.failing > 0 {
		return
	}
	d := time.Since(s.since)
	s.stalled.Set(0)
	s.seconds.Add(d.Seconds())
	if recovered {
		s.log.Info("stage recovered", "stage", s.name, "op", op, "stalled_for", d.Round(time.Millisecond).String())
	}
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/console"
	"github.com/delayq/delayq/internal/metric"
)

// Dependencies delayd probes, the values of the dependency label of
// delayq_dependency_up.
const (
	DepKafka = "kafka"
	DepRedis = "redis"
	DepHBase = "hbase"
	// DepMemory is the in-memory payload store of the embedded mode.
	DepMemory = "memory"
)

// Probe timing: a dependency that does not answer within probeTimeout is
// down; every probeEvery each is asked again.
const (
	probeEvery   = time.Second
	probeTimeout = 2 * time.Second
)

// noteStart wraps the setup step op so that its last failure shows on
// /readyz while delayd starts (startFailure).
func (d *Daemon) noteStart(op string, fn func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		err := fn(ctx)
		if err == nil {
			d.startErr.Store(nil)
			return nil
		}
		msg := op + ": " + err.Error()
		d.startErr.Store(&msg)
		return err
	}
}

// startFailure is ": <step>: <error>" while a setup step fails, else "".
func (d *Daemon) startFailure() string {
	if msg := d.startErr.Load(); msg != nil {
		return ": " + *msg
	}
	return ""
}

// probe asks one dependency whether it answers, with a real call.
type probe struct {
	dep   string
	check func(context.Context) error
}

// health probes the dependencies of the roles and keeps their state for
// /readyz and delayq_dependency_up. Stages do not consult it: each stalls
// and retries on its own (see internal/retry); health only makes an outage
// visible.
type health struct {
	probes []probe
	up     *prometheus.GaugeVec
	log    *slog.Logger

	mu   sync.Mutex
	down map[string]error          // dependency → last error, while down
	last map[string]console.Status // dependency → last probe result
}

func newHealth(probes []probe, log *slog.Logger, reg prometheus.Registerer) (*health, error) {
	var errs []error
	up := metric.Register(reg, &errs, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "delayq_dependency_up",
		Help: "1 when the dependency answered delayd's last probe (a real call), 0 when it did not.",
	}, []string{"dependency"}))
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("daemon: register health metrics: %w", err)
	}
	for _, p := range probes {
		up.WithLabelValues(p.dep).Set(1)
	}
	return &health{probes: probes, up: up, log: log, down: map[string]error{}, last: map[string]console.Status{}}, nil
}

// run probes every probeEvery until ctx ends. It logs one WARN line when a
// dependency stops answering and one INFO line when it answers again.
func (h *health) run(ctx context.Context) {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		var wg sync.WaitGroup
		for _, p := range h.probes {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, probeTimeout)
				defer cancel()
				start := time.Now()
				err := p.check(pctx)
				if ctx.Err() == nil {
					h.set(p.dep, err, start)
				}
			})
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *health) set(dep string, err error, start time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := console.Status{Name: dep, Up: err == nil, CheckedAt: start.UnixMilli(),
		LatencyMs: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		st.Error = reason(err)
	}
	h.last[dep] = st
	_, wasDown := h.down[dep]
	switch {
	case err != nil:
		h.down[dep] = err
		h.up.WithLabelValues(dep).Set(0)
		if !wasDown {
			h.log.Warn("dependency down", "dependency", dep, "err", err)
		}
	case wasDown:
		delete(h.down, dep)
		h.up.WithLabelValues(dep).Set(1)
		h.log.Info("dependency up again", "dependency", dep)
	}
}

// reason is what /readyz and the console tell of a probe's error: its
// kind, not its text, which names the addresses of brokers, ZooKeeper or
// Redis to whoever asks. The "dependency down" WARN line keeps the text.
func reason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "no answer within " + probeTimeout.String()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	default:
		return "error (the reason is in delayd's log)"
	}
}

// failing returns "dep: reason" for every dependency that is down, in
// name order; nothing for a nil health (no backends connected yet).
func (h *health) failing() []string {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for dep, err := range h.down {
		out = append(out, dep+": "+reason(err))
	}
	slices.Sort(out)
	return out
}

// Dependencies returns the last probe result of every dependency, in probe
// order (what the console shows).
func (h *health) Dependencies() []console.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]console.Status, 0, len(h.probes))
	for _, p := range h.probes {
		if st, ok := h.last[p.dep]; ok {
			out = append(out, st)
		}
	}
	return out
}

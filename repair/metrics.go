package repair

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
)

// Metrics are the repair's collectors. A nil *Metrics records nothing.
type Metrics struct {
	reindexedTotal prometheus.Counter
	overdueTotal   prometheus.Counter
	running        prometheus.Gauge
	duration       prometheus.Histogram
	detected       *prometheus.CounterVec
}

// NewMetrics registers the repair's collectors on reg (nil: none).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	var errs []error
	m := &Metrics{
		reindexedTotal: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_repair_reindexed_total",
			Help: "Pending tasks the repair found missing from the Redis index and indexed again from HBase.",
		})),
		overdueTotal: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_repair_overdue_total",
			Help: "Re-indexed tasks that were already due: delivered at once, a second time if they had been delivered before the loss.",
		})),
		running: metric.Register(reg, &errs, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "delayq_repair_running",
			Help: "1 while this process repairs the Redis index from HBase.",
		})),
		duration: metric.Register(reg, &errs, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "delayq_repair_duration_seconds",
			Help:    "How long a repair of the Redis index from HBase took.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 16), // 0.1 s .. 55 min
		})),
		detected: metric.Register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_repair_loss_detected_total",
			Help: "Losses of the Redis index detected, by cause (generation: the marker is gone; replid: a replica was promoted; restart: a master restarted from its files).",
		}, []string{"cause"})),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("repair: metrics: %w", err)
	}
	return m, nil
}

func (m *Metrics) reindexed(n, overdue int64) {
	if m == nil {
		return
	}
	m.reindexedTotal.Add(float64(n))
	m.overdueTotal.Add(float64(overdue))
}

// start sets the running gauge and returns the call that ends the run.
func (m *Metrics) start() func() {
	if m == nil {
		return func() {}
	}
	m.running.Set(1)
	t := time.Now()
	return func() {
		m.running.Set(0)
		m.duration.Observe(time.Since(t).Seconds())
	}
}

func (m *Metrics) lossDetected(cause string) {
	if m != nil {
		m.detected.WithLabelValues(cause).Inc()
	}
}

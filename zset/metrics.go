package zset

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The store metrics are shared with package payload (store="hbase"): both
// register the same names, help and labels (they must match exactly), and
// reuse whichever collector was registered first.
const (
	storeCallHelp   = "Latency of calls to the payload and index stores."
	storeErrorsHelp = "Failed calls to the payload and index stores."
)

type metrics struct {
	calls  *prometheus.HistogramVec
	errors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "delayq_store_call_seconds",
			Help:    storeCallHelp,
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s, as payload
		}, []string{"store", "op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_store_errors_total",
			Help: storeErrorsHelp,
		}, []string{"store", "op"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.calls, err = register(reg, m.calls); err != nil {
		return nil, err
	}
	if m.errors, err = register(reg, m.errors); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// the same description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("zset: register metrics: %w", err)
	}
	return c, nil
}

// observe records one call of op that started at start; *err is its result.
func (m *metrics) observe(op string, start time.Time, err *error) {
	m.calls.WithLabelValues("redis", op).Observe(time.Since(start).Seconds())
	if *err != nil {
		m.errors.WithLabelValues("redis", op).Inc()
	}
}

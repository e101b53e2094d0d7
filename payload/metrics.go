package payload

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of a store. The two vectors are shared by name with the other
// delayq stores (store label "hbase", "redis", ...): when the Registerer
// already holds them, the registered collectors are used.
type metrics struct {
	callSeconds *prometheus.HistogramVec // delayq_store_call_seconds{store,op}
	errors      *prometheus.CounterVec   // delayq_store_errors_total{store,op}
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "delayq",
			Name:      "store_call_seconds",
			Help:      "Latency of calls to the payload and index stores.",
			Buckets:   prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s
		}, []string{"store", "op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "delayq",
			Name:      "store_errors_total",
			Help:      "Failed calls to the payload and index stores.",
		}, []string{"store", "op"}),
	}
	if reg == nil {
		return m, nil
	}
	var err1, err2 error
	m.callSeconds, err1 = register(reg, m.callSeconds)
	m.errors, err2 = register(reg, m.errors)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("payload: register metrics: %w", err)
	}
	return m, nil
}

// register registers c, or returns the equal collector already registered.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

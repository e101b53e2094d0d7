package zset

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
)

// metrics of the index: delayq_store_call_seconds and
// delayq_store_errors_total with store="redis", shared with the payload
// store (store="hbase").
type metrics struct {
	calls  *prometheus.HistogramVec
	errors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var errs []error
	m := &metrics{
		calls:  metric.Register(reg, &errs, metric.NewStoreCalls()),
		errors: metric.Register(reg, &errs, metric.NewStoreErrors()),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("zset: register metrics: %w", err)
	}
	return m, nil
}

// observe records one call of op that started at start; *err is its result.
func (m *metrics) observe(op string, start time.Time, err *error) {
	m.calls.WithLabelValues("redis", op).Observe(time.Since(start).Seconds())
	if *err != nil {
		m.errors.WithLabelValues("redis", op).Inc()
	}
}

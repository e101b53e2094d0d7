package hbase

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
)

// metrics of a store: delayq_store_call_seconds and delayq_store_errors_total
// with store="hbase", shared with the index (store="redis").
type metrics struct {
	callSeconds *prometheus.HistogramVec
	errors      *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var errs []error
	m := &metrics{
		callSeconds: metric.Register(reg, &errs, metric.NewStoreCalls()),
		errors:      metric.Register(reg, &errs, metric.NewStoreErrors()),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("hbase: register metrics: %w", err)
	}
	return m, nil
}

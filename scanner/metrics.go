package scanner

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	delivered    prometheus.Counter
	cancelled    prometheus.Counter
	missing      prometheus.Counter
	failed       *prometheus.CounterVec
	lateness     prometheus.Histogram
	scanDuration prometheus.Histogram
	scanTasks    *prometheus.CounterVec
	commitErrors prometheus.Counter
}

// newMetrics builds the scanner's metrics and registers them with reg (nil:
// not registered). A collector already registered under the same name and
// shape (another scanner, or ingest's delayq_tasks_failed_total) is shared.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var errs []error
	m := &metrics{
		delivered: register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_delivered_total",
			Help: "Tasks produced to their business topic.",
		})),
		cancelled: register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_cancelled_total",
			Help: "Due tasks dropped because they were cancelled.",
		})),
		missing: register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_missing_total",
			Help: "Due index entries without a payload row (expired or never stored).",
		})),
		failed: register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_tasks_failed_total",
			Help: "Tasks that went to delay-failed (or were dropped), by reason.",
		}, []string{"reason"})),
		lateness: register(reg, &errs, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "delayq_delivery_lateness_seconds",
			Help:    "Delivery time minus due time of delivered tasks.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		})),
		scanDuration: register(reg, &errs, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "delayq_scan_duration_seconds",
			Help:    "Duration of completed scan tasks.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		})),
		scanTasks: register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_scan_tasks_total",
			Help: "Scan tasks handled, by result (done, invalid, abandoned).",
		}, []string{"result"})),
		commitErrors: register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_scan_commit_errors_total",
			Help: "Failed offset commits of the scan consumer group.",
		})),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("scanner: metrics: %w", err)
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, errs *[]error, c C) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	*errs = append(*errs, err)
	return c
}

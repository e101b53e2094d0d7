package scanner

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
)

type metrics struct {
	delivered    prometheus.Counter
	cancelled    prometheus.Counter
	missing      prometheus.Counter
	failed       *prometheus.CounterVec
	lateness     prometheus.Histogram
	pastDue      prometheus.Counter
	scanDuration prometheus.Histogram
	scanTasks    *prometheus.CounterVec
	commitErrors prometheus.Counter
	parked       prometheus.Gauge
	unauthorized prometheus.Counter
	fenced       *prometheus.CounterVec
}

// newMetrics builds the scanner's metrics and registers them with reg (nil:
// not registered). A collector already registered under the same name and
// shape (another scanner, or ingest's delayq_tasks_failed_total) is shared.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var errs []error
	m := &metrics{
		delivered: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_delivered_total",
			Help: "Tasks produced to their business topic.",
		})),
		cancelled: metric.Register(reg, &errs, metric.NewTasksCancelled()),
		missing: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_missing_total",
			Help: "Due index entries without a payload row (expired or never stored).",
		})),
		failed: metric.Register(reg, &errs, metric.NewTasksFailed()),
		lateness: metric.Register(reg, &errs, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "delayq_delivery_lateness_seconds",
			Help:    "Delivery time minus due time of delivered tasks.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		})),
		pastDue: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_past_due_delivered_total",
			Help: "Delivered tasks submitted with a due time already past (delivered at once; not in delayq_delivery_lateness_seconds).",
		})),
		scanDuration: metric.Register(reg, &errs, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "delayq_scan_duration_seconds",
			Help:    "Time completed scan tasks spent scanning (waits for entries to fall due excluded).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		})),
		scanTasks: metric.Register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_scan_tasks_total",
			Help: "Scan tasks handled, by result (done, invalid, abandoned).",
		}, []string{"result"})),
		commitErrors: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_scan_commit_errors_total",
			Help: "Failed offset commits of the scan consumer group.",
		})),
		parked: metric.Register(reg, &errs, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "delayq_scan_parked",
			Help: "Deliveries held aside after a failed write, written again alone (refused or failing topics).",
		})),
		unauthorized: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_delivery_unauthorized_total",
			Help: "Writes of a delivery that Kafka refused because delayd's principal may not write its topic (retried until an ACL allows it).",
		})),
		fenced: metric.Register(reg, &errs, metric.NewFencedWrites()),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("scanner: metrics: %w", err)
	}
	// The series of delivery refusals exist from the start at 0: an alert
	// on increase() sees the first refusal only as a step from a sample
	// before it (DelayqDeliveryRefused).
	for _, r := range []string{reasonRefused, reasonUndeliverable} {
		m.failed.WithLabelValues(r)
	}
	return m, nil
}

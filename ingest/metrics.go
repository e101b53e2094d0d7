package ingest

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
)

// Reasons, the values of delayq_tasks_failed_total's reason label.
const (
	ReasonContract = "contract" // the message breaks the wire contract
	ReasonStore    = "store"    // Store.Put failed after retries
	ReasonIndex    = "index"    // Index.Add failed after retries
)

type metrics struct {
	accepted     prometheus.Counter
	cancels      prometheus.Counter
	failed       *prometheus.CounterVec
	batch        prometheus.Histogram
	retries      *prometheus.CounterVec
	commitErrors prometheus.Counter
	lag          *prometheus.GaugeVec
}

// newMetrics builds the ingester's metrics and registers them with reg (nil:
// not registered). A collector already registered under the same name and
// shape is shared: another ingester's, or the scanner's
// delayq_tasks_failed_total (defined once in internal/metric).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var errs []error
	m := &metrics{
		accepted: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_accepted_total",
			Help: "Tasks stored in both the payload store and the index.",
		})),
		cancels: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_cancels_accepted_total",
			Help: "Cancel markers stored in the payload store.",
		})),
		failed: metric.Register(reg, &errs, metric.NewTasksFailed()),
		batch: metric.Register(reg, &errs, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "delayq_ingest_batch_seconds",
			Help:    "Time to handle and commit one input batch.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		})),
		retries: metric.Register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_ingest_retries_total",
			Help: "Failed ingest calls that were retried, by operation (put, add, failed).",
		}, []string{"op"})),
		commitErrors: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_ingest_commit_errors_total",
			Help: "Input offset commits that failed (the batch will be read again).",
		})),
		lag: metric.Register(reg, &errs, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "delayq_ingest_lag",
			Help: "Input messages behind the high-water mark, largest over the partitions of the last batch, by topic.",
		}, []string{"topic"})),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("ingest: metrics: %w", err)
	}
	for _, r := range []string{ReasonContract, ReasonStore, ReasonIndex} {
		m.failed.WithLabelValues(r)
	}
	for _, op := range []string{opPut, opAdd, opFailed} {
		m.retries.WithLabelValues(op)
	}
	return m, nil
}

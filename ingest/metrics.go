package ingest

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
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
// delayq_tasks_failed_total (the help text must stay the same as there).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var errs []error
	m := &metrics{
		accepted: register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_accepted_total",
			Help: "Tasks stored in both the payload store and the index.",
		})),
		cancels: register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_cancels_accepted_total",
			Help: "Cancel markers stored in the payload store.",
		})),
		failed: register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_tasks_failed_total",
			Help: "Tasks that went to delay-failed (or were dropped), by reason.",
		}, []string{"reason"})),
		batch: register(reg, &errs, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "delayq_ingest_batch_seconds",
			Help:    "Time to handle and commit one input batch.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		})),
		retries: register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_ingest_retries_total",
			Help: "Failed ingest calls that were retried, by operation (put, add, failed).",
		}, []string{"op"})),
		commitErrors: register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_ingest_commit_errors_total",
			Help: "Input offset commits that failed (the batch will be read again).",
		})),
		lag: register(reg, &errs, prometheus.NewGaugeVec(prometheus.GaugeOpts{
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

// register registers c with reg, or returns the collector of the same shape
// already registered there.
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

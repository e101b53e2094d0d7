package dispatcher

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
)

// Tick results.
const (
	resultWon   = "won"
	resultLost  = "lost"
	resultError = "error"
)

// Due buckets of the pending_tasks gauge, by how soon a segment ends.
var dueBuckets = []string{"overdue", "under_1m", "under_1h", "under_1d", "later"}

type metrics struct {
	ticks   *prometheus.CounterVec
	emitted prometheus.Counter
	pending *prometheus.GaugeVec
	// seconds is the time a won tick spends per phase: emit (DueGroups and
	// the scan task write), retire, backlog.
	seconds *prometheus.HistogramVec
	// fenced counts writes refused because the tick's turn had passed
	// (delayq_fenced_writes_total, shared with the other stages).
	fenced *prometheus.CounterVec
}

// Values of the write label of delayq_fenced_writes_total.
const (
	writeEmit   = "emit"
	writeRetire = "retire"
)

// Phases of a won tick.
const (
	phaseEmit    = "emit"
	phaseRetire  = "retire"
	phaseBacklog = "backlog"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_dispatch_ticks_total",
			Help: "Dispatch ticks by result: won (this instance emitted), lost (another instance holds the tick), error.",
		}, []string{"result"}),
		emitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_scan_tasks_emitted_total",
			Help: "Scan tasks written to the scan topic.",
		}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "delayq_pending_tasks",
			Help: "Tasks pending in the index by when their segment ends: overdue, under_1m, under_1h, under_1d, later. Refreshed by the dispatcher that wins a tick.",
		}, []string{"due"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "delayq_dispatch_seconds",
			Help:    "Time a won dispatch tick spends per phase: emit (due zsets listed and scan tasks written), retire, backlog.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1ms to 33s
		}, []string{"phase"}),
	}
	for _, r := range []string{resultWon, resultLost, resultError} {
		m.ticks.WithLabelValues(r)
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.ticks, m.emitted, m.pending, m.seconds} {
		metric.Register(reg, &errs, c)
	}
	m.fenced = metric.Register(reg, &errs, metric.NewFencedWrites())
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dispatcher: register metrics: %w", err)
	}
	return m, nil
}

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
}

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
	}
	for _, r := range []string{resultWon, resultLost, resultError} {
		m.ticks.WithLabelValues(r)
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.ticks, m.emitted, m.pending} {
		metric.Register(reg, &errs, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dispatcher: register metrics: %w", err)
	}
	return m, nil
}

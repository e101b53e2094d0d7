package ingest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
)

// Reasons, the values of delayq_tasks_failed_total's reason label. Each
// counts messages that can never succeed; an outage counts nowhere here
// (see delayq_stage_stalled and delayq_stage_retries_total{stage="ingest"}).
const (
	ReasonContract = "contract" // the message breaks the wire contract
	ReasonStore    = "store"    // Store.Put refused the task for good
	ReasonIndex    = "index"    // Index.Add refused the entry for good
	// ReasonLifecycle: a reschedule or cancel by id alone that can never
	// apply (unknown id, cancelled, already due; see lifecycle.go).
	ReasonLifecycle = "lifecycle"
	// reasonPanic: handling the message panicked (panic.go).
	reasonPanic = "internal"
)

type metrics struct {
	accepted     prometheus.Counter
	cancels      prometheus.Counter
	reschedules  prometheus.Counter
	failed       *prometheus.CounterVec
	cancelled    prometheus.Counter // entries forgotten (forget), shared with the scanner
	batch        prometheus.Histogram
	commitErrors prometheus.Counter
	fenced       *prometheus.CounterVec
	// replicasRedone counts batches stored again because a Redis master
	// was replaced while they were stored (replicas.go).
	replicasRedone prometheus.Counter
	lag            *lagGauge
}

// newMetrics builds the ingester's metrics and registers them with reg (nil:
// not registered). A collector already registered under the same name and
// shape is shared: another ingester's, or the scanner's
// delayq_tasks_failed_total and delayq_tasks_cancelled_total (defined once
// in internal/metric).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	var errs []error
	m := &metrics{
		accepted: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_accepted_total",
			Help: "Tasks stored in both the payload store and the index.",
		})),
		cancels: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_cancels_accepted_total",
			Help: "Cancels accepted: by id and due time (a cancel marker) or by id alone (the id row).",
		})),
		reschedules: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_reschedules_accepted_total",
			Help: "Reschedules accepted: applied, or waiting in the id row for their task.",
		})),
		failed:    metric.Register(reg, &errs, metric.NewTasksFailed()),
		cancelled: metric.Register(reg, &errs, metric.NewTasksCancelled()),
		batch: metric.Register(reg, &errs, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "delayq_ingest_batch_seconds",
			Help:    "Time to handle and commit one input batch of one partition.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		})),
		commitErrors: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_ingest_commit_errors_total",
			Help: "Input offset commits that failed for good (the generation ended first; the batch will be read again).",
		})),
		fenced: metric.Register(reg, &errs, metric.NewFencedWrites()),
		replicasRedone: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_ingest_redis_master_changed_total",
			Help: "Input batches stored again because a Redis master was replaced while they were stored (--redis-min-replicas).",
		})),
		lag: &lagGauge{
			g: metric.Register(reg, &errs, prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Name: "delayq_ingest_lag",
				Help: "Input messages behind the high-water mark, summed over the partitions this process consumes, by topic.",
			}, []string{"topic"})),
			by: map[string]map[int]int64{},
		},
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("ingest: metrics: %w", err)
	}
	for _, r := range []string{ReasonContract, ReasonStore, ReasonIndex, ReasonLifecycle} {
		m.failed.WithLabelValues(r)
	}
	return m, nil
}

// lagGauge sums the lag of the partitions this process consumes, by topic.
// It is safe for concurrent use: every partition lane reports its own.
type lagGauge struct {
	g  *prometheus.GaugeVec
	mu sync.Mutex
	by map[string]map[int]int64 // topic → partition → lag
}

// set records partition's lag; a negative lag forgets the partition (its
// lane ended: another process may consume it now).
func (l *lagGauge) set(topic string, partition int, lag int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.by[topic]
	if ps == nil {
		ps = map[int]int64{}
		l.by[topic] = ps
	}
	if lag < 0 {
		delete(ps, partition)
	} else {
		ps[partition] = lag
	}
	var sum int64
	for _, n := range ps {
		sum += n
	}
	l.g.WithLabelValues(topic).Set(float64(sum))
}

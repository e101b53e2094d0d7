package metric

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it, or returns the collector of
// the same description already registered there. A nil reg registers
// nothing. A registration error is appended to errs and c is returned, so a
// caller builds all its collectors and reports every error at once.
func Register[C prometheus.Collector](reg prometheus.Registerer, errs *[]error, c C) C {
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

// NewStoreCalls is delayq_store_call_seconds{store,op}: the latency of calls
// to the payload store (store="hbase") and the index (store="redis").
func NewStoreCalls() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "delayq_store_call_seconds",
		Help:    "Latency of calls to the payload and index stores.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s
	}, []string{"store", "op"})
}

// NewStoreErrors is delayq_store_errors_total{store,op}.
func NewStoreErrors() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "delayq_store_errors_total",
		Help: "Failed calls to the payload and index stores.",
	}, []string{"store", "op"})
}

// NewTasksFailed is delayq_tasks_failed_total{reason}: tasks that went to
// delay-failed (ingest: contract, store, index; scanner: refused,
// undeliverable).
func NewTasksFailed() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "delayq_tasks_failed_total",
		Help: "Tasks that went to delay-failed (or were dropped), by reason.",
	}, []string{"reason"})
}

// NewTasksCancelled is delayq_tasks_cancelled_total: tasks taken out of the
// schedule because their row carries the cancel marker (a cancel, the old
// row of a reschedule, a replaced row): by ingest, which forgets their
// index entries when it marks them, or by the scanner, which drops what
// is still indexed when it falls due. Each entry is counted once, by the
// one that removed it.
func NewTasksCancelled() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "delayq_tasks_cancelled_total",
		Help: "Tasks taken out of the schedule because they were cancelled, moved or replaced: their index entry forgotten by ingest, or dropped by the scanner when due.",
	})
}

// NewFencedWrites is delayq_fenced_writes_total{stage,write}: writes a
// fence refused (package internal/fence) because the work they were for
// had passed to another instance while this one was paused, by stage
// (dispatcher, scanner, ingest) and write (emit, retire, produce, remove,
// hold, put, add, ...). Each refused attempt counts once.
func NewFencedWrites() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "delayq_fenced_writes_total",
		Help: "Writes refused because the lock, lease or consumer-group generation they were for had passed to another instance (a paused process), by stage and write.",
	}, []string{"stage", "write"})
}

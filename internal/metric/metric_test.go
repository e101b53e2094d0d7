package metric

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterShares(t *testing.T) {
	reg := prometheus.NewRegistry()
	var errs []error
	a := Register(reg, &errs, NewTasksFailed())
	b := Register(reg, &errs, NewTasksFailed())
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if a != b {
		t.Fatal("second registration did not return the registered collector")
	}
	// Same name, other labels: an error, reported, not a panic.
	Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{Name: "delayq_tasks_failed_total", Help: "x"}))
	if len(errs) != 1 {
		t.Fatalf("want 1 error for a clashing collector, got %v", errs)
	}
	if c := Register(nil, &errs, NewStoreErrors()); c == nil || len(errs) != 1 {
		t.Fatal("nil registerer must register nothing and report nothing")
	}
}

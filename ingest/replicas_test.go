package ingest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/delayq/delayq/internal/retry"
)

// fakeReplicas scripts Replicas: marks[i] is the i-th Mark or Wait's
// mark; Wait fails (a replica down) until down has passed.
type fakeReplicas struct {
	ev    *events
	mu    sync.Mutex
	marks []string
	calls int
	down  time.Duration
	until time.Time
}

func (f *fakeReplicas) next(ev string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.marks[min(f.calls, len(f.marks)-1)]
	f.calls++
	f.ev.add(ev + " " + m)
	return m
}

func (f *fakeReplicas) Mark(context.Context) (string, error) { return f.next("mark"), nil }

func (f *fakeReplicas) Wait(context.Context) (string, error) {
	f.mu.Lock()
	if f.until.IsZero() {
		f.until = time.Now().Add(f.down)
	}
	down := time.Now().Before(f.until)
	f.mu.Unlock()
	if down {
		return "", errOutage
	}
	return f.next("wait"), nil
}

// TestReplicasWaitBeforeCommit: with Replicas, a batch is committed only
// after Wait; a replica down stalls it, never sends it to the failed
// topic; a master replaced during the batch makes it stored again.
func TestReplicasWaitBeforeCommit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		marks []string
		down  time.Duration
		want  []string
	}{
		{"same master", []string{"a"}, 0,
			[]string{"mark a", "put 2", "add 2", "wait a", "commit delay-input/0@2"}},
		{"replica down for a minute", []string{"a"}, time.Minute,
			[]string{"mark a", "put 2", "add 2", "wait a", "commit delay-input/0@2"}},
		{"master replaced", []string{"a", "b", "b"}, 0,
			[]string{"mark a", "put 2", "add 2", "wait b", "put 2", "add 2", "wait b", "commit delay-input/0@2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &fakeReplicas{marks: tt.marks, down: tt.down}
				f := newFixture(t, func(c *Config) { c.BatchSize = 2; c.Replicas = r })
				f.in.backoff = retry.Backoff{}
				r.ev = f.ev
				lr := runLane(t, f, nil)
				lr.r.in <- after("delay-input", 0, 0)
				lr.r.in <- after("delay-input", 0, 1)
				time.Sleep(tt.down / 2)
				if got := lr.gen.committed("delay-input", 0); tt.down > 0 && got != 0 {
					t.Errorf("committed %d while the replica was down", got)
				}
				time.Sleep(tt.down + time.Minute)
				lr.stop()
				if err := lr.wait(); err != nil {
					t.Fatalf("consume: %v", err)
				}
				if got := f.ev.list(); !slices.Equal(got, tt.want) {
					t.Errorf("events %v, want %v", got, tt.want)
				}
				if calls, _ := f.w.snapshot(); calls != 0 {
					t.Errorf("failed topic written %d times", calls)
				}
			})
		})
	}
}

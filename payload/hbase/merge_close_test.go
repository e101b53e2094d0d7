package hbase

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// close cancels the merged read in flight, whose Get then fails, and
// returns only once the merger's goroutines have ended; a Get after close
// fails without a read.
func TestMergerClose(t *testing.T) {
	var reads, inFlight atomic.Int32
	started := make(chan struct{}, 1)
	m := newMerger(func(ctx context.Context, refs []payload.Ref) ([]*payload.Task, []error, error) {
		reads.Add(1)
		inFlight.Add(1)
		defer inFlight.Add(-1)
		started <- struct{}{}
		<-ctx.Done() // a read HBase does not answer
		return nil, nil, ctx.Err()
	}, 2)

	got := make(chan error, 1)
	go func() {
		_, err := m.get(t.Context(), []payload.Ref{{ID: 1, ExecAt: 1}})
		got <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the merged read never started")
	}
	m.close()
	if n := inFlight.Load(); n != 0 {
		t.Fatalf("close returned with %d reads in flight", n)
	}
	m.mu.Lock()
	running := m.running
	m.mu.Unlock()
	if running != 0 {
		t.Fatalf("close returned with %d merger goroutines running", running)
	}
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Get in flight at close = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Get in flight at close never returned")
	}

	if _, err := m.get(t.Context(), []payload.Ref{{ID: 2, ExecAt: 1}}); !errors.Is(err, errClosed) {
		t.Fatalf("Get after close = %v, want errClosed", err)
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads, want 1 (none after close)", n)
	}
	m.close() // idempotent
}

package fence

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/payload"
)

// Refused reports whether err is a fence's refusal: retrying the write
// cannot help, the work passed to another instance (or the context ended
// while a Lease was lapsed).
func Refused(err error) bool { return errors.Is(err, ErrFenced) }

// Counter checks the fence of a stage's writes and counts each refusal in
// delayq_fenced_writes_total{stage,write} (metric.NewFencedWrites).
type Counter struct {
	Refused *prometheus.CounterVec
	Stage   string // ingest, scanner
}

// Check checks the fence of ctx (Check) before a write and counts a
// refusal under write.
func (c Counter) Check(ctx context.Context, write string) error {
	err := Check(ctx)
	if err != nil {
		c.Refused.WithLabelValues(c.Stage, write).Inc()
	}
	return err
}

// Store is the payload store a stage reads and writes (ingest.Store,
// scanner.Store).
type Store interface {
	Put(ctx context.Context, tasks []payload.Task) error
	Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error)
	payload.IDStore
}

// WrapStore returns s with its writes, Put and PutIDs, checked by c and
// counted under write; reads are not fenced.
func WrapStore(s Store, c Counter, write string) Store {
	return fencedStore{Store: s, c: c, write: write}
}

type fencedStore struct {
	Store
	c     Counter
	write string
}

func (st fencedStore) Put(ctx context.Context, tasks []payload.Task) error {
	if err := st.c.Check(ctx, st.write); err != nil {
		return err
	}
	return st.Store.Put(ctx, tasks)
}

func (st fencedStore) PutIDs(ctx context.Context, writes []payload.IDWrite) error {
	if err := st.c.Check(ctx, st.write); err != nil {
		return err
	}
	return st.Store.PutIDs(ctx, writes)
}

// Keep fences the writes of one consumer-group generation: it runs renew
// (kafka/consumer.Fence) with a new Lease on a goroutine of its own until
// stop is called. It returns wctx, ctx carrying the lease, for the
// generation's writes; leased, gctx ended also once renew returns (the
// lease revoked), so that a revoked lease ends the generation's work as
// the generation's end does; and stop, which ends renew, waits for it and
// ends leased. renew does not end with ctx: only stop ends it.
func Keep(ctx, gctx context.Context, renew func(ctx context.Context, l *Lease)) (wctx, leased context.Context, stop func()) {
	lease := NewLease()
	leased, endGen := context.WithCancel(gctx)
	rctx, stopRenew := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		renew(rctx, lease)
		endGen() // revoked, or stop was called
	}()
	return With(ctx, lease), leased, func() { stopRenew(); <-done; endGen() }
}

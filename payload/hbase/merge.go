package hbase

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/delayq/delayq/payload"
)

// maxMergedRefs caps the refs of one merged read; a Get larger than that
// is read alone.
const maxMergedRefs = 1 << 18

// errClosed answers a Get that reaches the merger after Close.
var errClosed = errors.New("hbase: store closed")

// getReq is one Get waiting for a merged read.
type getReq struct {
	ctx  context.Context
	refs []payload.Ref
	out  []*payload.Task
	err  error
	done chan struct{}
}

// merger runs the Gets of a Store as merged reads: a Get that arrives
// while MergedGets reads are in flight waits, and the next read takes
// every Get waiting then (up to maxMergedRefs refs) as one.
//
// Why: every scanner worker steps its own zsets, so the Gets of a process
// arrive together, each for a few thousand rows spread thinly over the
// salts, and a filtered scan seeks from one wanted row to the next. Read
// together they ask for more of the rows of the ranges they cover and
// take fewer calls (measured: docs/performance.md, "the writer's batch
// size and merged Gets").
//
// Its goroutines, at most limit, each read until the queue is empty; close
// cancels life, the parent of every read (a lifetime, not a caller's ctx,
// since a read serves many callers), and waits for them.
type merger struct {
	read  readFunc
	limit int // reads in flight at most
	life  context.Context
	end   context.CancelFunc
	wg    sync.WaitGroup

	mu      sync.Mutex
	queue   []*getReq
	running int
	closed  bool
}

// readFunc reads the rows of refs: the task of each (nil: no such row),
// each row's error, and the read's error (Store.read).
type readFunc func(ctx context.Context, refs []payload.Ref) ([]*payload.Task, []error, error)

func newMerger(read readFunc, limit int) *merger {
	life, end := context.WithCancel(context.Background())
	return &merger{read: read, limit: limit, life: life, end: end}
}

// close ends the reads in flight (their Gets fail), waits for the
// goroutines, and makes every later Get fail. It is idempotent.
func (m *merger) close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.end()
	m.wg.Wait()
}

// get queues refs for a merged read and waits for it, or for ctx.
func (m *merger) get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error) {
	r := &getReq{ctx: ctx, refs: refs, done: make(chan struct{})}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errClosed
	}
	m.queue = append(m.queue, r)
	if m.running < m.limit {
		m.running++
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.run()
		}()
	}
	m.mu.Unlock()
	select {
	case <-r.done:
		return r.out, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run reads what the queue holds until it is empty.
func (m *merger) run() {
	for {
		m.mu.Lock()
		n, refs := 0, 0
		for n < len(m.queue) && (n == 0 || refs+len(m.queue[n].refs) <= maxMergedRefs) {
			refs += len(m.queue[n].refs)
			n++
		}
		if n == 0 {
			m.running--
			m.mu.Unlock()
			return
		}
		batch := slices.Clone(m.queue[:n])
		clear(m.queue[:n]) // the array outlives them: let them go
		m.queue = m.queue[n:]
		m.mu.Unlock()
		m.readBatch(batch)
	}
}

// readBatch reads the refs of batch together and hands each Get its tasks and
// the first error among its rows (or the read's error). The read ends
// early only when every Get of batch has given up, or at close.
func (m *merger) readBatch(batch []*getReq) {
	live := batch[:0]
	for _, r := range batch {
		if r.ctx.Err() != nil {
			close(r.done) // get has returned already
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(m.life)
	defer cancel()
	var waiting atomic.Int64
	waiting.Store(int64(len(live)))
	var refs []payload.Ref
	for _, r := range live {
		stop := context.AfterFunc(r.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
		refs = append(refs, r.refs...)
	}
	out, errs, err := m.read(ctx, refs)
	at := 0
	for _, r := range live {
		n := len(r.refs)
		if r.err = err; err == nil {
			if r.err = firstError(errs[at : at+n]); r.err == nil {
				r.out = out[at : at+n : at+n]
			}
		}
		at += n
		close(r.done)
	}
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

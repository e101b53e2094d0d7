package rangescan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/delayq/delayq/payload"
)

// Store scans stored tasks by due time: rows with from <= ExecAt < to in
// (ExecAt, ID) order (hbase.Store, payload.Memory).
type Store interface {
	Scan(ctx context.Context, from, to int64, fn func(payload.Task) error) error
}

// Cursor is where a run is.
type Cursor struct {
	Scanned  int64 // rows read in [From, To)
	Position int64 // the due time (unix ms) of the last row read
	// Resume is where a rerun should start: every row due before it has
	// been handled. It is To after a complete run.
	Resume int64
}

// Pipeline reads [From, To) in batches of the items Keep makes of the
// rows. Name prefixes the errors of the scan and of an interruption
// ("backfill: scan: …").
type Pipeline[T any] struct {
	Name      string
	From, To  int64
	BatchSize int
	// Drain, when above 0, flushes the batch in hand after the scan stopped
	// early, with a fresh deadline of Drain when ctx ended.
	Drain time.Duration
	// Keep makes a row into a batch item; false leaves the row out (the
	// caller counts why).
	Keep func(payload.Task) (T, bool)
	// Flush handles a full batch, and the last; the pipeline reuses the
	// slice afterwards. An error stops the run and is returned as it is.
	Flush func(ctx context.Context, batch []T) error
	// Progress, when set, is called after every batch (and after a flush
	// of no items).
	Progress func(Cursor)
}

// Validate reports the range and batch size problems of a config, each
// wrapping errConfig; checkers is the concurrency of its checks.
func Validate(errConfig error, from, to int64, batchSize, checkers int) []error {
	var errs []error
	if from < 0 {
		errs = append(errs, fmt.Errorf("%w: from %d is before 1970", errConfig, from))
	}
	if to <= from {
		errs = append(errs, fmt.Errorf("%w: to %s is not after from %s", errConfig,
			payload.FormatTime(to), payload.FormatTime(from)))
	}
	if batchSize < 0 {
		errs = append(errs, fmt.Errorf("%w: batch size %d is negative", errConfig, batchSize))
	}
	if checkers < 0 {
		errs = append(errs, fmt.Errorf("%w: checkers %d is negative", errConfig, checkers))
	}
	return errs
}

// Run scans [p.From, p.To) of store batch by batch. It returns the Cursor
// and, when it stopped early, an error: a flush's as it is, or ctx's or
// the store's wrapped with p.Name (and joined with the drain's).
func (p Pipeline[T]) Run(ctx context.Context, store Store) (Cursor, error) {
	r := &run[T]{p: p, cur: Cursor{Resume: p.From}}
	var flushErr error
	scanErr := store.Scan(ctx, p.From, p.To, func(t payload.Task) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.cur.Scanned++
		r.cur.Position = t.ExecAt
		if v, ok := p.Keep(t); ok {
			r.batch = append(r.batch, v)
		}
		if len(r.batch) < p.BatchSize {
			return nil
		}
		if err := r.flush(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // interrupted: the batch stays in hand
			}
			flushErr = err
			return err
		}
		return nil
	})
	if flushErr != nil {
		return r.cur, flushErr
	}
	if ctx.Err() == nil && scanErr == nil {
		if err := r.flush(ctx); err != nil {
			return r.cur, err
		}
		r.cur.Resume = p.To
		return r.cur, nil
	}
	drainErr := r.drain(ctx)
	if ctx.Err() != nil {
		return r.cur, errors.Join(fmt.Errorf("%s: interrupted: %w", p.Name, ctx.Err()), drainErr)
	}
	return r.cur, errors.Join(fmt.Errorf("%s: scan: %w", p.Name, scanErr), drainErr)
}

type run[T any] struct {
	p     Pipeline[T]
	cur   Cursor
	batch []T // the items of the rows kept, in scan order
}

// drain flushes the batch in hand after the scan stopped early, when
// Pipeline.Drain asks for it; after an interrupt, with a fresh deadline.
func (r *run[T]) drain(ctx context.Context) error {
	if r.p.Drain <= 0 {
		return nil
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), r.p.Drain)
		defer cancel()
	}
	return r.flush(ctx)
}

// flush hands the batch over; Resume advances past it once it is done.
func (r *run[T]) flush(ctx context.Context) error {
	if len(r.batch) > 0 {
		if err := r.p.Flush(ctx, r.batch); err != nil {
			return err
		}
		r.batch = r.batch[:0]
	}
	r.cur.Resume = max(r.cur.Resume, r.cur.Position)
	if r.p.Progress != nil {
		r.p.Progress(r.cur)
	}
	return nil
}

// Ask calls check for every item, at most limit at a time, and returns
// the answers in order; the first error cancels the checks not yet done
// and is returned.
func Ask[T any](ctx context.Context, items []T, limit int, check func(ctx context.Context, item T) (bool, error)) ([]bool, error) {
	out := make([]bool, len(items))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i, item := range items {
		g.Go(func() error {
			ok, err := check(gctx, item)
			out[i] = ok
			return err
		})
	}
	return out, g.Wait()
}

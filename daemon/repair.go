package daemon

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/ingest"
	"github.com/delayq/delayq/internal/watermark"
	"github.com/delayq/delayq/repair"
	"github.com/delayq/delayq/scanner"
	"github.com/delayq/delayq/zset"
)

// guardedIndex is the index ingest uses: its op flags are believed only
// while the generation marker says the index lost nothing (see package
// repair, FlagsTrusted) and no call of ingest's to Redis failed in the
// last hold; otherwise every submit reads its id row. A Redis that comes
// back from a crash or a failover may lack the flags of the writes it
// acknowledged last, and the loss watcher needs up to its interval to see
// it and mark the loss: hold (3 × --repair-interval) covers that.
type guardedIndex struct {
	ingestIndex
	gen    *repair.Generation
	hold   time.Duration
	failed atomic.Int64 // unix ns of the last failed call, 0: none
}

func (g *guardedIndex) Add(ctx context.Context, now time.Time, entries []zset.Entry) error {
	return g.note(g.ingestIndex.Add(ctx, now, entries))
}

func (g *guardedIndex) Forget(ctx context.Context, now time.Time, entries []zset.Entry) (int64, error) {
	n, err := g.ingestIndex.Forget(ctx, now, entries)
	return n, g.note(err)
}

func (g *guardedIndex) FlagOps(ctx context.Context, ids []uint64, ttl time.Duration) error {
	return g.note(g.ingestIndex.FlagOps(ctx, ids, ttl))
}

func (g *guardedIndex) Flagged(ctx context.Context, ids []uint64) ([]bool, error) {
	ok, err := g.gen.FlagsTrusted(ctx)
	if err != nil {
		return nil, g.note(err)
	}
	if ok && time.Since(time.Unix(0, g.failed.Load())) >= g.hold {
		flagged, err := g.OpFlags.Flagged(ctx, ids)
		return flagged, g.note(err)
	}
	return slices.Repeat([]bool{true}, len(ids)), nil
}

// note records when a call failed for a reason other than a refused
// entry (an outage: Redis down, failing over or restarting) and returns
// err.
func (g *guardedIndex) note(err error) error {
	if err != nil && !errors.Is(err, zset.ErrBadEntry) {
		g.failed.Store(time.Now().UnixNano())
	}
	return err
}

// newRepair returns the index ingest uses, the role that detects a lost
// index and repairs it from the store, and the Guard that holds the
// scanner's deliveries until it has (both nil when RepairInterval is
// negative).
func (d *Daemon) newRepair(rdb redis.UniversalClient, store Store, ix *zset.Index) (ingest.Index, func(context.Context) error, *repair.Guard, error) {
	cfg := d.cfg
	inIx := ingestIndex{ix.Writer(), ix.OpFlags()}
	if cfg.RepairInterval < 0 {
		return inIx, nil, nil, nil
	}
	m, err := repair.NewMetrics(d.reg)
	if err != nil {
		return nil, nil, nil, err
	}
	w, err := repair.NewWatcher(repair.WatchConfig{
		Prefix: cfg.Prefix, Interval: cfg.RepairInterval, Lookback: cfg.RepairLookback, MaxDelay: cfg.MaxDelay,
		FlagTTL: cfg.MaxDelay + cfg.Retention, NewIndex: d.opts.newIndex, Logger: d.opts.Logger, Metrics: m,
	}, rdb, store, ix.Repairer())
	if err != nil {
		return nil, nil, nil, err
	}
	g := &guardedIndex{ingestIndex: inIx, gen: repair.NewGeneration(rdb, cfg.Prefix), hold: 3 * w.Interval()}
	return g, w.Run, repair.NewGuard(rdb, cfg.Prefix, 0, 0, d.opts.Logger), nil
}

// holds is the scanner's Hold made of several: an entry is delivered once
// every one of them lets it.
type holds []scanner.Hold

func (h holds) Cutoff(now int64) int64 {
	c := now
	for _, x := range h {
		c = min(c, x.Cutoff(now))
	}
	return c
}

func (h holds) Poll() time.Duration {
	p := h[0].Poll()
	for _, x := range h[1:] {
		p = min(p, x.Poll())
	}
	return p
}

// scanHold is the scanner's Hold: the ingest watermarks', and the index
// repair's when there is one (guard nil: none).
func scanHold(w *watermark.Follower, guard *repair.Guard) scanner.Hold {
	if guard == nil {
		return w
	}
	return holds{w, guard}
}

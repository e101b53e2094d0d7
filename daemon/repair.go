package daemon

import (
	"context"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/ingest"
	"github.com/delayq/delayq/repair"
	"github.com/delayq/delayq/zset"
)

// guardedIndex is the index ingest uses: its op flags are believed only
// while the generation marker says the index lost nothing (see package
// repair, FlagsTrusted); otherwise every submit reads its id row.
type guardedIndex struct {
	ingestIndex
	gen *repair.Generation
}

func (g guardedIndex) Flagged(ctx context.Context, ids []uint64) ([]bool, error) {
	ok, err := g.gen.FlagsTrusted(ctx)
	if err != nil {
		return nil, err
	}
	if ok {
		return g.OpFlags.Flagged(ctx, ids)
	}
	return slices.Repeat([]bool{true}, len(ids)), nil
}

// newRepair returns the index ingest uses and the role that detects a
// lost index and repairs it from the store (nil when RepairInterval is
// negative or the store cannot be scanned).
func (d *Daemon) newRepair(rdb redis.UniversalClient, store Store, ix *zset.Index) (ingest.Index, func(context.Context) error, error) {
	cfg := d.cfg
	inIx := ingestIndex{ix.Writer(), ix.OpFlags()}
	if cfg.RepairInterval < 0 {
		return inIx, nil, nil
	}
	m, err := repair.NewMetrics(d.reg)
	if err != nil {
		return nil, nil, err
	}
	w, err := repair.NewWatcher(repair.WatchConfig{
		Prefix: cfg.Prefix, Interval: cfg.RepairInterval, Lookback: cfg.RepairLookback, MaxDelay: cfg.MaxDelay,
		FlagTTL: cfg.MaxDelay + cfg.Retention, Logger: d.opts.Logger, Metrics: m,
	}, rdb, store, ix.Repairer())
	if err != nil {
		return nil, nil, err
	}
	return guardedIndex{ingestIndex: inIx, gen: repair.NewGeneration(rdb, cfg.Prefix)}, w.Run, nil
}

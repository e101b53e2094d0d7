package repair

import (
	"context"
	"fmt"
	"time"
)

// OpScanner lists the ids whose id row holds an op by id: a cancel by id
// alone or a reschedule (hbase.Store, payload.Memory).
type OpScanner interface {
	ScanOps(ctx context.Context, fn func(id uint64) error) error
}

// Flagger sets op flags (zset.Index).
type Flagger interface {
	FlagOps(ctx context.Context, ids []uint64, ttl time.Duration) error
}

// flagBatch is how many op flags RebuildFlags sets in one FlagOps.
const flagBatch = 1000

// RebuildFlags sets the op flag of every id with an op by id in s again,
// for ttl (the op lifetime: a flag longer than needed only costs a
// submit of that id an id-row read). It returns how many it set.
func RebuildFlags(ctx context.Context, s OpScanner, f Flagger, ttl time.Duration) (int64, error) {
	var n int64
	batch := make([]uint64, 0, flagBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := f.FlagOps(ctx, batch, ttl); err != nil {
			return fmt.Errorf("repair: set %d op flags: %w", len(batch), err)
		}
		n += int64(len(batch))
		batch = batch[:0]
		return nil
	}
	err := s.ScanOps(ctx, func(id uint64) error {
		batch = append(batch, id)
		if len(batch) < flagBatch {
			return nil
		}
		return flush()
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return n, fmt.Errorf("repair: rebuild op flags: %w", err)
	}
	return n, nil
}

// FlagsTrusted reports whether the index's op flags can be believed: the
// marker names a generation and no loss is being repaired. While it
// reports false, ingest must read the id row of every submit (answer
// Flagged with all true): a flag lost with the index would otherwise let
// a submit miss the cancel by id alone that came before it.
func (g *Generation) FlagsTrusted(ctx context.Context) (bool, error) {
	m, err := g.Read(ctx)
	if err != nil {
		return false, err
	}
	return m.ID != "" && m.Lost == 0, nil
}

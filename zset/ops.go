package zset

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// OpFlags keeps the op flags of task ids: ingest flags an id that has had
// an op by id and asks before it reads an id row.
type OpFlags struct{ *core }

// opsChunk bounds the commands of one pipeline of FlagOps and Flagged.
const opsChunk = 1000

// opKey is the flag of a task id that has had an op by id (cancel by id
// alone, reschedule): {prefix}:op:{id}. Segments are digits, so it never
// meets a zset key.
func (ix *core) opKey(id uint64) string {
	return ix.prefix + ":op:" + strconv.FormatUint(id, 10)
}

// MaxFlagTTL caps the TTL of an op flag: a flag always expires (Redis
// keeps a key given no TTL, or a TTL past its clock's range, forever or
// refuses it).
const MaxFlagTTL = 100 * 365 * 24 * time.Hour

// FlagOps sets the op flag of each id for ttl (SET key 1 EX ttl, pipelined),
// at least a second and at most MaxFlagTTL. Ingest flags an id before it
// writes the op to the id row, and a submit reads the id row only when its
// id is flagged: a Redis EXISTS instead of an HBase Get on the submit path.
func (ix *OpFlags) FlagOps(ctx context.Context, ids []uint64, ttl time.Duration) (err error) {
	if len(ids) == 0 {
		return nil
	}
	ttl = min(max(ttl, time.Second), MaxFlagTTL)
	defer ix.metrics.observe("flag_ops", time.Now(), &err)
	for lo := 0; lo < len(ids); lo += opsChunk {
		pipe := ix.client.Pipeline()
		for _, id := range ids[lo:min(lo+opsChunk, len(ids))] {
			pipe.Set(ctx, ix.opKey(id), "1", ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("zset: flag %d ids: %w", len(ids), err)
		}
	}
	return nil
}

// Flagged reports, for each id, whether FlagOps flagged it (EXISTS,
// pipelined).
func (ix *OpFlags) Flagged(ctx context.Context, ids []uint64) (_ []bool, err error) {
	out := make([]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	defer ix.metrics.observe("flagged", time.Now(), &err)
	for lo := 0; lo < len(ids); lo += opsChunk {
		hi := min(lo+opsChunk, len(ids))
		pipe := ix.client.Pipeline()
		cmds := make([]*redis.IntCmd, 0, hi-lo)
		for _, id := range ids[lo:hi] {
			cmds = append(cmds, pipe.Exists(ctx, ix.opKey(id)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("zset: flags of %d ids: %w", len(ids), err)
		}
		for i, c := range cmds {
			out[lo+i] = c.Val() > 0
		}
	}
	return out, nil
}

package zset

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Watermarks keeps the ingest watermarks: ingest writes them, the
// scanner's follower (package internal/watermark) reads them.
type Watermarks struct{ *core }

// marksKey is the hash of ingest watermarks (package internal/watermark):
// field "topic/partition", value unix ms. One key, so Redis Cluster serves
// it from one node.
func (ix *core) marksKey() string { return ix.prefix + ":marks" }

// SetMarks stores the ingest watermarks marks (by field) in one HSET.
func (ix *Watermarks) SetMarks(ctx context.Context, marks map[string]int64) (err error) {
	if len(marks) == 0 {
		return nil
	}
	defer ix.metrics.observe("set_marks", time.Now(), &err)
	args := make([]any, 0, 2*len(marks))
	for f, w := range marks {
		args = append(args, f, w)
	}
	if err := ix.client.HSet(ctx, ix.marksKey(), args...).Err(); err != nil {
		return fmt.Errorf("zset: set %d ingest watermarks: %w", len(marks), err)
	}
	return nil
}

// Marks returns the ingest watermarks by field; a value that is not a
// number is left out.
func (ix *Watermarks) Marks(ctx context.Context) (_ map[string]int64, err error) {
	defer ix.metrics.observe("marks", time.Now(), &err)
	raw, err := ix.client.HGetAll(ctx, ix.marksKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("zset: ingest watermarks: %w", err)
	}
	out := make(map[string]int64, len(raw))
	for f, v := range raw {
		if w, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[f] = w
		}
	}
	return out, nil
}

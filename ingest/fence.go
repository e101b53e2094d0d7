package ingest

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/fence"
	"github.com/delayq/delayq/zset"
)

// Ingest's writes are fenced (package internal/fence): a lane works in a
// context that carries its generation's lease (consumer.Fence: valid
// while the coordinator counts this member, revoked once it gave the
// partitions away), and every write to the store, the index and the
// failed topic, and every commit, checks it right before. An ingester
// paused past its session wakes with the batch in hand refused: it stores,
// indexes and commits nothing of a batch another member has read again
// meanwhile (whose later ops by id the stale writes could otherwise
// undo), and its generation ends. Kafka refuses the commit of an ended
// generation on its own; the fence refuses it earlier and counts it.
//
// The wrappers (fence.WrapStore for the store) are installed once by New;
// reads are not fenced.

// Values of the write label of delayq_fenced_writes_total.
const (
	writePut    = "put"    // Store.Put, Store.PutIDs
	writeAdd    = "add"    // Index.Add, Index.FlagOps
	writeFailed = "failed" // the failed topic
	writeCommit = "commit"
)

// fenced reports a write the fence refused: retrying it cannot help, the
// lease was revoked (or the context ended while it was lapsed).
var fenced = fence.Refused

// check checks the fence of ctx and counts a refusal.
func check(ctx context.Context, c *prometheus.CounterVec, write string) error {
	return fence.Counter{Refused: c, Stage: "ingest"}.Check(ctx, write)
}

type fencedIndex struct {
	Index
	fenced *prometheus.CounterVec
}

func (ix fencedIndex) Add(ctx context.Context, now time.Time, entries []zset.Entry) error {
	if err := check(ctx, ix.fenced, writeAdd); err != nil {
		return err
	}
	return ix.Index.Add(ctx, now, entries)
}

func (ix fencedIndex) FlagOps(ctx context.Context, ids []uint64, ttl time.Duration) error {
	if err := check(ctx, ix.fenced, writeAdd); err != nil {
		return err
	}
	return ix.Index.FlagOps(ctx, ids, ttl)
}

type fencedWriter struct {
	Writer
	fenced *prometheus.CounterVec
}

func (w fencedWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if err := check(ctx, w.fenced, writeFailed); err != nil {
		return err
	}
	return w.Writer.WriteMessages(ctx, msgs...)
}

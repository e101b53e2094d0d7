package scanner

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/fence"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// The scanner's writes are fenced (package internal/fence): the fence of
// the context they are made in is checked right before each. A worker
// works in a context that carries its generation's lease
// (consumer.Fence: valid while the coordinator counts this member), the
// releaser in one that carries its topic lease (a fence.Lease taken by
// Controls.Lease and kept by releaser.keep with Controls.Renew, which never
// takes a lapsed lease). A scanner paused past its session or lease wakes
// with its writes refused: it produces nothing another instance delivered
// meanwhile and removes nothing, and its generation ends.
//
// The wrappers below are installed once by New, so every write of every
// path (a step, a parked write, the drain, the next occurrence of a
// recurring task, a hold, a release) goes through a check; the store's
// is fence.WrapStore. Controls.Forget is not fenced, by design: it writes
// only the registry of held topics and decides from its own reads, so a
// pause anywhere in it loses and duplicates nothing, while a fence that
// stopped it between its SREM and its second look would strand held
// tasks (topicctl.Store.Forget, TestForgetPaused).

// Values of the write label of delayq_fenced_writes_total.
const (
	writeProduce = "produce"
	writeRemove  = "remove"
	writeIndex   = "index" // the next occurrence of a recurring task
	writeStore   = "store" // its row and id row
	writeHold    = "hold"
	writeRelease = "release"
)

// isFenced reports a write the fence refused: retrying it cannot help,
// the lease was revoked or expired.
var isFenced = fence.Refused

// check checks the fence of ctx and counts a refusal.
func check(ctx context.Context, c *prometheus.CounterVec, write string) error {
	return fence.Counter{Refused: c, Stage: "scanner"}.Check(ctx, write)
}

type fencedWriter struct {
	Writer
	fenced *prometheus.CounterVec
}

func (w fencedWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if err := check(ctx, w.fenced, writeProduce); err != nil {
		return err
	}
	return w.Writer.WriteMessages(ctx, msgs...)
}

type fencedIndex struct {
	Index
	fenced *prometheus.CounterVec
}

func (ix fencedIndex) RemoveMany(ctx context.Context, rs []zset.Removal) error {
	if err := check(ctx, ix.fenced, writeRemove); err != nil {
		return err
	}
	return ix.Index.RemoveMany(ctx, rs)
}

func (ix fencedIndex) Add(ctx context.Context, now time.Time, entries []zset.Entry) error {
	if err := check(ctx, ix.fenced, writeIndex); err != nil {
		return err
	}
	return ix.Index.Add(ctx, now, entries)
}

// controls names Controls as an embedded field apart from its method
// Controls.
type controls = Controls

type fencedControls struct {
	controls
	fenced *prometheus.CounterVec
}

func (c fencedControls) Hold(ctx context.Context, topic string, refs []payload.Ref) error {
	if err := check(ctx, c.fenced, writeHold); err != nil {
		return err
	}
	return c.controls.Hold(ctx, topic, refs)
}

func (c fencedControls) Release(ctx context.Context, topic string, refs []payload.Ref) error {
	if err := check(ctx, c.fenced, writeRelease); err != nil {
		return err
	}
	return c.controls.Release(ctx, topic, refs)
}

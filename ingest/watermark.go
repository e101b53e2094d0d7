package ingest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/watermark"
	"github.com/delayq/delayq/kafka/kafkaauth"
)

// Marks stores ingest watermarks (zset.Watermarks).
type Marks interface {
	SetMarks(ctx context.Context, marks map[string]int64) error
}

// progress is what a lane tells the watermark publisher.
type progress struct {
	next      atomic.Int64 // next offset to store: the committed one; negative while unknown
	idleSince atomic.Int64 // unix ms since when the lane waits for a message; 0 while busy
	hwm       atomic.Int64 // the high watermark the last fetched message came with (its lag's end)
}

// idle notes that the lane starts waiting for a message.
func (p *progress) idle() { p.idleSince.Store(time.Now().UnixMilli()) }

// busy notes that the lane stopped waiting.
func (p *progress) busy() { p.idleSince.Store(0) }

// Offsets of a partition that endOffsets asks for.
type offsetKind int

const (
	logEnd    offsetKind = iota // after the last record, committed or not (the high watermark)
	logStart                    // the first offset kept
	stableEnd                   // where the first open transaction begins, else logEnd (the last stable offset)
)

// endOffsets asks Kafka for one kind of offset of topic's partitions.
type endOffsets func(ctx context.Context, topic string, partitions []int, kind offsetKind) (map[int]int64, error)

// kafkaOffsets is the endOffsets of a kafka-go Client on brokers.
func kafkaOffsets(brokers []string, auth *kafkaauth.Auth, timeout time.Duration) endOffsets {
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: auth.Transport(), Timeout: timeout}
	return func(ctx context.Context, topic string, partitions []int, kind offsetKind) (map[int]int64, error) {
		first := kind == logStart
		reqs := make([]kafka.OffsetRequest, len(partitions))
		for i, p := range partitions {
			reqs[i] = kafka.LastOffsetOf(p)
			if first {
				reqs[i] = kafka.FirstOffsetOf(p)
			}
		}
		iso := kafka.ReadUncommitted
		if kind == stableEnd {
			iso = kafka.ReadCommitted
		}
		res, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}, IsolationLevel: iso})
		if err != nil {
			return nil, fmt.Errorf("ingest: list offsets of %s: %w", topic, auth.Diagnose(ctx, c, err))
		}
		out := make(map[int]int64, len(partitions))
		for _, po := range res.Topics[topic] {
			if po.Error != nil {
				continue
			}
			if first {
				out[po.Partition] = po.FirstOffset
			} else {
				out[po.Partition] = po.LastOffset
			}
		}
		return out, nil
	}
}

// publishMarks publishes, every MarkEvery until ctx ends, the watermark of
// every lane of the input topic and of the slow one. A round Kafka or
// Redis does not answer is skipped: the published watermarks stand still,
// which only holds deliveries back. Deliveries wait for the input topic's
// watermarks only (internal/watermark's Follower reads its own topic's
// fields); the slow topic's tell the repair which of its tasks were
// stored (package repair: the failover and restart window).
func (in *Ingester) publishMarks(ctx context.Context, lanes []lane) {
	var parts []lanePartition
	byPart := map[lanePartition]*progress{}
	trackers := map[lanePartition]*watermark.Tracker{}
	for _, l := range lanes {
		if l.topic == in.cfg.Input || l.topic == in.cfg.Slow {
			lp := lanePartition{l.topic, l.partition}
			parts = append(parts, lp)
			byPart[lp] = l.prog
			trackers[lp] = &watermark.Tracker{}
		}
	}
	if in.cfg.Marks == nil || len(parts) == 0 {
		return
	}
	t := time.NewTicker(in.cfg.MarkEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		at := time.Now().UnixMilli()
		cctx, cancel := context.WithTimeout(ctx, 5*in.cfg.MarkEvery)
		marks := map[string]int64{}
		var err error
		for _, topic := range []string{in.cfg.Input, in.cfg.Slow} {
			var ps []int
			for _, lp := range parts {
				if lp.topic == topic {
					ps = append(ps, lp.partition)
				}
			}
			if len(ps) == 0 {
				continue
			}
			if err = in.marks(cctx, topic, ps, byPart, trackers, at, marks); err != nil {
				break
			}
		}
		if err == nil {
			err = in.cfg.Marks.SetMarks(cctx, marks)
		}
		cancel()
		if err != nil {
			in.log.Debug("watermarks not published", "err", err)
		}
	}
}

// marks samples the end offsets of topic's lanes parts at `at` and adds
// the watermarks known to out, by field.
func (in *Ingester) marks(ctx context.Context, topic string, parts []int, byPart map[lanePartition]*progress,
	trackers map[lanePartition]*watermark.Tracker, at int64, out map[string]int64) error {
	ends, err := in.offsets(ctx, topic, parts, logEnd)
	if err != nil {
		return err
	}
	// Asked after the ends: a stable offset below its end means a
	// transaction is open, so the lane cannot see what follows it yet.
	stable, err := in.offsets(ctx, topic, parts, stableEnd)
	if err != nil {
		return err
	}
	var unknown []int // lanes that have stored nothing yet, from the log start
	for _, p := range parts {
		if byPart[lanePartition{topic, p}].next.Load() < 0 {
			unknown = append(unknown, p)
		}
	}
	var starts map[int]int64
	if len(unknown) > 0 {
		if starts, err = in.offsets(ctx, topic, unknown, logStart); err != nil {
			return err
		}
	}
	for _, p := range parts {
		end, ok := ends[p]
		if !ok {
			continue
		}
		lp := lanePartition{topic, p}
		next := byPart[lp].next.Load()
		if s, ok := starts[p]; ok && next < 0 && s == end {
			next = end // nothing stored because there is nothing
		}
		idle := byPart[lp].idleSince.Load()
		if s, ok := stable[p]; !ok || s < end {
			// Not idle but held back by an open transaction: a cancel
			// written after it is not stored yet, so the watermark waits
			// for the transaction to end (commit, abort, or the broker's
			// transaction timeout).
			idle = 0
		}
		if w := trackers[lp].Observe(at, end, next, idle); w > 0 {
			out[watermark.Field(topic, p)] = w
		}
	}
	return nil
}

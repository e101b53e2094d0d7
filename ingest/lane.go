package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/drain"
	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
)

// Operations of the ingest stage, the values of the op label of
// delayq_stage_retries_total{stage="ingest"}.
const (
	opFetch  = "fetch"  // a partition reader's fetch (Kafka)
	opPut    = "put"    // Store.Put (HBase)
	opAdd    = "add"    // Index.Add (Redis)
	opForget = "forget" // Index.Forget (Redis)
	opFailed = "failed" // the failed-topic write (Kafka)
	opCommit = "commit" // the offset commit (Kafka)
	opWait   = "wait"   // Replicas.Mark and Wait (Redis replicas)
)

// fetcher is the part of a partition's *kafka.Reader a lane uses.
type fetcher interface {
	FetchMessage(ctx context.Context) (kafka.Message, error)
	Close() error
}

// committer commits offsets in one consumer-group generation: a
// *kafka.Generation, whose commits the coordinator refuses once the
// generation is over, so a late commit can never land on the next
// generation and move an offset backwards.
type committer interface {
	CommitOffsets(offsets map[string]map[int]int64) error
}

// lane is one partition of a generation's assignment.
type lane struct {
	topic     string
	partition int
	r         fetcher
	lim       *limiter // shared by the slow topic's lanes; nil: no limit
	prog      *progress
}

// generation runs one consume loop per lane until ctx (stop) or gctx (the
// generation ended) is done and every lane has finished its batch in hand;
// each lane's reader is closed as soon as its loop ends (a close waits for
// the reader's fetch in flight, so the lanes close side by side). Without
// lanes (more members than partitions) it just waits: returning would end
// the generation and make the group rebalance again at once.
func (in *Ingester) generation(ctx, gctx context.Context, c committer, lanes []lane) error {
	if len(lanes) == 0 {
		select {
		case <-ctx.Done():
		case <-gctx.Done():
		}
		return nil
	}
	errs := make([]error, len(lanes))
	var wg sync.WaitGroup
	// The watermarks go on while the lanes run, and end with them.
	mctx, stopMarks := context.WithCancel(ctx)
	var marks sync.WaitGroup
	marks.Go(func() { in.publishMarks(mctx, lanes) })
	defer marks.Wait()
	defer stopMarks()
	for i, l := range lanes {
		wg.Go(func() {
			errs[i] = in.consume(ctx, gctx, c, l)
			_ = l.r.Close()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// consume is one partition's loop: fetch a batch, store it, commit it, until
// ctx or gctx ends. The batch in hand then gets DrainTimeout more to be
// stored and committed. It returns an error only when ctx was cancelled (a
// stop) before the batch in hand was committed.
func (in *Ingester) consume(ctx, gctx context.Context, c committer, l lane) error {
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(gctx, stop)()
	workCtx, cancelWork := drain.Context(stopCtx, in.cfg.DrainTimeout)
	defer cancelWork()
	defer in.m.lag.set(l.topic, l.partition, -1)

	// A partition with no new input (delay-input-slow, mostly) waits in
	// its fetch: after a Kafka outage, 5 s of waiting without an error end
	// the stall.
	fetchPolicy := retry.Policy{Backoff: in.backoff, Idle: 5 * time.Second}
	batch := make([]payload.Message, 0, in.cfg.BatchSize)
	for {
		// A fetch error is a Kafka outage: retried until the broker answers
		// or the lane stops. Messages fetched before an error are handled.
		_ = in.stage.Do(stopCtx, opFetch, fetchPolicy, func(ctx context.Context) error {
			var err error
			batch, err = in.fetch(ctx, l, batch[:0])
			if len(batch) > 0 {
				return nil
			}
			return err
		})
		if len(batch) > 0 {
			if err := in.process(workCtx, c, l, batch); err != nil {
				if ctx.Err() != nil {
					in.log.Warn("stopped before the batch in hand was committed; it will be read again",
						"topic", l.topic, "partition", l.partition, "err", err)
					return err
				}
				// The generation is over. If the batch was stored, this
				// member starts after it should the next generation give
				// it the partition again; another owner reads the batch
				// again (idempotent writes, but a task delivered meanwhile
				// would come back).
				in.log.Warn("generation ended before the batch in hand was committed; another owner reads it again",
					"topic", l.topic, "partition", l.partition, "err", err)
				return nil
			}
		}
		if stopCtx.Err() != nil {
			return nil
		}
	}
}

// fetch appends messages of l to batch until it holds BatchSize of them or
// BatchBytes of payload, BatchWait has passed since the first, ctx ends or
// fetching fails. It waits for the first message as long as it takes. An
// error comes with the messages fetched before it, which must still be
// handled.
func (in *Ingester) fetch(ctx context.Context, l lane, batch []payload.Message) ([]payload.Message, error) {
	fctx := ctx
	size := 0
	for len(batch) < in.cfg.BatchSize && size < in.cfg.BatchBytes {
		if l.lim != nil {
			if err := l.lim.wait(fctx); err != nil {
				break
			}
		}
		if len(batch) == 0 {
			l.prog.idle()
		}
		m, err := l.r.FetchMessage(fctx)
		l.prog.busy()
		if err != nil {
			if l.lim != nil {
				l.lim.refund() // no message came for that token
			}
			if ctx.Err() != nil || fctx.Err() == nil {
				return batch, err // stopping, or a real error
			}
			break // the batch's time is up
		}
		batch = append(batch, record.ToMessage(m))
		size += messageBytes(batch[len(batch)-1])
		l.prog.hwm.Store(m.HighWaterMark)
		if len(batch) == 1 {
			var cancel context.CancelFunc
			fctx, cancel = context.WithTimeout(ctx, in.cfg.BatchWait)
			defer cancel()
		}
	}
	return batch, ctx.Err()
}

// messageBytes is what m weighs in a batch: key, value and headers.
func messageBytes(m payload.Message) int {
	n := len(m.Key) + len(m.Value)
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// process stores batch (messages of one partition, in offset order) and
// commits the offset after it in the generation c. It returns an error when
// ctx ended first (nothing committed) or when the generation refused the
// commit (it is over).
func (in *Ingester) process(ctx context.Context, c committer, l lane, batch []payload.Message) error {
	start := time.Now()
	first, last := batch[0], batch[len(batch)-1]
	if err := in.handleReplicated(ctx, batch); err != nil {
		return fmt.Errorf("ingest: %s/%d: offsets %d..%d not stored, not committed: %w",
			l.topic, l.partition, first.Offset, last.Offset, err)
	}
	next := last.Offset + 1
	err := in.stage.Do(ctx, opCommit, retry.Policy{Backoff: in.backoff, Permanent: func(err error) bool { return generationOver(err) || fenced(err) }}, func(ctx context.Context) error {
		if err := check(ctx, in.m.fenced, writeCommit); err != nil {
			return err
		}
		return c.CommitOffsets(map[string]map[int]int64{l.topic: {l.partition: next}})
	})
	if err != nil {
		in.m.commitErrors.Inc()
		in.ahead.set(l.topic, l.partition, next)
		return fmt.Errorf("ingest: %s/%d: offsets %d..%d stored, not committed: %w",
			l.topic, l.partition, first.Offset, last.Offset, err)
	}
	l.prog.next.Store(next)
	in.m.lag.set(l.topic, l.partition, max(l.prog.hwm.Load()-next, 0))
	in.m.batch.Observe(time.Since(start).Seconds())
	return nil
}

// generationOver reports commit errors that say this member's generation is
// over: no retry of the commit can succeed.
func generationOver(err error) bool {
	return errors.Is(err, kafka.IllegalGeneration) ||
		errors.Is(err, kafka.UnknownMemberId) ||
		errors.Is(err, kafka.RebalanceInProgress) ||
		errors.Is(err, kafka.FencedInstanceID)
}

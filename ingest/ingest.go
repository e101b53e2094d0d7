package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/drain"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// ErrRunning is returned by Run when the Ingester is already running.
var ErrRunning = errors.New("ingest: already running")

// Store keeps task payloads (the HBase store). Put is batched and
// idempotent; a Task with Cancel set writes only the cancel marker.
type Store interface {
	Put(ctx context.Context, tasks []payload.Task) error
}

// Index keeps the ids of pending tasks by due time (the Redis zset index).
type Index interface {
	Add(ctx context.Context, now time.Time, entries []zset.Entry) error
}

// Writer writes messages to the failed topic; each message names its topic.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// reader is the part of *kafka.Reader a consume loop uses.
type reader interface {
	FetchMessage(ctx context.Context) (kafka.Message, error)
	CommitMessages(ctx context.Context, msgs ...kafka.Message) error
	Close() error
}

// Ingester consumes the input topics into the payload store and the index.
type Ingester struct {
	cfg     Config
	st      Store
	ix      Index
	w       Writer
	log     *slog.Logger
	m       *metrics
	running atomic.Bool
}

// New checks cfg and returns an Ingester that stores tasks in store and ix and
// writes rejected messages with w. It connects to nothing; Run does.
func New(cfg Config, store Store, ix Index, w Writer) (*Ingester, error) {
	cfg.setDefaults()
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if store == nil {
		errs = append(errs, fmt.Errorf("%w: store: nil", ErrConfig))
	}
	if ix == nil {
		errs = append(errs, fmt.Errorf("%w: index: nil", ErrConfig))
	}
	if w == nil {
		errs = append(errs, fmt.Errorf("%w: writer: nil", ErrConfig))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Ingester{
		cfg: cfg,
		st:  store,
		ix:  ix,
		w:   w,
		log: cfg.Logger.With("component", "ingest"),
		m:   m,
	}, nil
}

// Run consumes Input and Slow until ctx is cancelled, then finishes and
// commits the batches in hand, closes its readers and returns nil. It returns
// an error only when a batch could be neither stored nor sent to the failed
// topic before StopTimeout (it was not committed and will be read again).
func (in *Ingester) Run(ctx context.Context) error {
	if !in.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer in.running.Store(false)

	readers := make([]reader, 2)
	for i, topic := range []string{in.cfg.Input, in.cfg.Slow} {
		r, err := in.newReader(topic)
		if err != nil {
			return err
		}
		readers[i] = r
	}
	return in.run(ctx, readers[0], readers[1])
}

// run consumes input and slow (readers of Input and Slow) until ctx ends.
// It closes the readers only after both lanes have committed their last
// batch: closing one leaves the group and ends the generation, which would
// make the other lane's final commit fail.
func (in *Ingester) run(ctx context.Context, input, slow reader) error {
	lanes := []struct {
		topic string
		r     reader
		lim   *limiter
	}{
		{in.cfg.Input, input, nil},
		{in.cfg.Slow, slow, newLimiter(in.cfg.SlowRate, min(int(in.cfg.SlowRate), in.cfg.BatchSize))},
	}
	errs := make([]error, len(lanes))
	var wg sync.WaitGroup
	for i, l := range lanes {
		wg.Go(func() { errs[i] = in.consume(ctx, l.topic, l.r, l.lim) })
	}
	in.log.Info("ingest started", "input", in.cfg.Input, "slow", in.cfg.Slow, "group", in.cfg.GroupID)
	wg.Wait()
	for _, l := range lanes {
		if err := l.r.Close(); err != nil {
			in.log.Warn("close reader", "topic", l.topic, "err", err)
		}
	}
	in.log.Info("ingest stopped")
	return errors.Join(errs...)
}

// newReader returns the consumer-group reader of one input topic, built by
// our kafka package (FetchMessage + synchronous CommitMessages, partition
// watching, MinBytes 1) with a queue as deep as a batch.
func (in *Ingester) newReader(topic string) (*kafka.Reader, error) {
	rc, err := consumer.ReaderConfig{
		Brokers:     in.cfg.Brokers,
		GroupID:     in.cfg.GroupID,
		Topics:      []string{topic},
		MaxBytes:    16 << 20, // room for input of payload's MaxPayload and more
		StartOffset: kafka.FirstOffset,
		Logger:      in.log,
	}.Config()
	if err != nil {
		return nil, fmt.Errorf("ingest: reader for %s: %w", topic, err)
	}
	rc.CommitInterval = 0 // CommitMessages commits synchronously: after the stores, before the next batch
	rc.QueueCapacity = in.cfg.BatchSize
	rc.JoinGroupBackoff = time.Second
	return kafka.NewReader(rc), nil
}

// consume is one topic's loop: fetch a batch, handle it, commit it, until
// ctx ends. It leaves r open.
func (in *Ingester) consume(ctx context.Context, topic string, r reader, lim *limiter) error {
	log := in.log.With("topic", topic)
	batch := make([]kafka.Message, 0, in.cfg.BatchSize)
	backoff := in.cfg.Backoff
	for {
		var err error
		batch, err = in.fetch(ctx, r, lim, batch[:0])
		if len(batch) > 0 {
			if perr := in.process(ctx, topic, r, batch); perr != nil {
				return perr
			}
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, io.EOF):
			return fmt.Errorf("ingest: %s: reader closed: %w", topic, err)
		case err != nil:
			log.Warn("fetch failed", "err", err, "backoff", backoff)
			if sleep(ctx, backoff) != nil {
				return nil
			}
			backoff = min(2*backoff, in.cfg.MaxBackoff)
		default:
			backoff = in.cfg.Backoff
		}
	}
}

// fetch appends messages to batch until it holds BatchSize of them, BatchWait
// has passed since the first, ctx ends or fetching fails. It waits for the
// first message as long as it takes. An error comes with the messages fetched
// before it, which must still be handled.
func (in *Ingester) fetch(ctx context.Context, r reader, lim *limiter, batch []kafka.Message) ([]kafka.Message, error) {
	fctx := ctx
	for len(batch) < in.cfg.BatchSize {
		if lim != nil {
			if err := lim.wait(fctx); err != nil {
				break
			}
		}
		m, err := r.FetchMessage(fctx)
		if err != nil {
			if lim != nil {
				lim.refund() // no message came for that token
			}
			if ctx.Err() != nil || fctx.Err() == nil {
				return batch, err // stopping, or a real error
			}
			break // the batch's time is up
		}
		batch = append(batch, m)
		if len(batch) == 1 {
			var cancel context.CancelFunc
			fctx, cancel = context.WithTimeout(ctx, in.cfg.BatchWait)
			defer cancel()
		}
	}
	return batch, ctx.Err()
}

// process handles batch until it is stored or sent to the failed topic, then
// commits it. It keeps going after ctx is cancelled, for at most StopTimeout.
func (in *Ingester) process(ctx context.Context, topic string, r reader, batch []kafka.Message) error {
	start := time.Now()
	pctx, cancel := drain.Context(ctx, in.cfg.StopTimeout)
	defer cancel()
	log := in.log.With("topic", topic)

	backoff := in.cfg.Backoff
	for {
		err := in.handle(pctx, batch, time.Now())
		if err == nil {
			break
		}
		if pctx.Err() != nil {
			log.Error("batch neither stored nor failed; not committed", "messages", len(batch), "err", err)
			return fmt.Errorf("ingest: %s: batch of %d not committed: %w", topic, len(batch), err)
		}
		log.Error("batch neither stored nor failed; handling it again", "messages", len(batch), "backoff", backoff, "err", err)
		if sleep(pctx, backoff) != nil {
			return fmt.Errorf("ingest: %s: batch of %d not committed: %w", topic, len(batch), err)
		}
		backoff = min(2*backoff, in.cfg.MaxBackoff)
	}

	last := lastPerPartition(batch)
	if err := r.CommitMessages(pctx, last...); err != nil {
		// The batch is stored: reading it again only repeats idempotent writes.
		in.m.commitErrors.Inc()
		log.Warn("commit failed; the batch will be read again", "messages", len(batch), "err", err)
	}
	var lag int64
	for _, m := range last {
		lag = max(lag, m.HighWaterMark-m.Offset-1)
	}
	in.m.lag.WithLabelValues(topic).Set(float64(lag))
	in.m.batch.Observe(time.Since(start).Seconds())
	return nil
}

// lastPerPartition returns the message with the highest offset of each
// partition in batch: committing those commits the whole batch.
func lastPerPartition(batch []kafka.Message) []kafka.Message {
	idx := map[int]int{}
	var last []kafka.Message
	for _, m := range batch {
		i, ok := idx[m.Partition]
		switch {
		case !ok:
			idx[m.Partition] = len(last)
			last = append(last, m)
		case m.Offset > last[i].Offset:
			last[i] = m
		}
	}
	return last
}

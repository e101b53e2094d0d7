package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/fence"
	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// ErrRunning is returned by Run when the Ingester is already running.
var ErrRunning = errors.New("ingest: already running")

// Store keeps task payloads (the HBase store). Put is batched and
// idempotent; a Task with Cancel set writes only the cancel marker. An error
// wrapping payload.ErrContract means the store refuses a task of the batch
// for good (it breaks one of the store's limits); any other error is an
// outage, retried for as long as it takes.
//
// It keeps an id row per task name beside the task rows (payload.IDStore:
// HBase and payload.Memory), which the ops by id need, and Get reads the
// row of a task to move.
type Store interface {
	Put(ctx context.Context, tasks []payload.Task) error
	Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error)
	payload.IDStore
}

// Index keeps the ids of pending tasks by due time (the Redis zset index).
// Add is idempotent. An error wrapping zset.ErrBadEntry means it refuses an
// entry of the call for good; any other error is an outage, retried for as
// long as it takes.
//
// FlagOps and Flagged keep a flag per id that has had an op by id, kept
// ttl: a submit reads its id row only when its id is flagged (a Redis
// EXISTS instead of an HBase Get per submit). An index without flags
// answers Flagged with all true: every submit reads its id row.
type Index interface {
	Add(ctx context.Context, now time.Time, entries []zset.Entry) error
	// Forget removes the entries of rows that ingest marked cancelled
	// (cancels, moves, replaces) wherever Add put them, so that the
	// backlog counts only tasks still to deliver (zset.Writer.Forget).
	// It returns how many entries it removed.
	Forget(ctx context.Context, now time.Time, entries []zset.Entry) (int64, error)
	FlagOps(ctx context.Context, ids []uint64, ttl time.Duration) error
	Flagged(ctx context.Context, ids []uint64) ([]bool, error)
}

// Writer writes messages to the failed topic; each message names its topic.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Ingester consumes the input topics into the payload store and the index.
type Ingester struct {
	cfg     Config
	st      Store
	ix      Index
	w       Writer
	log     *slog.Logger
	m       *metrics
	stage   *retry.Stage
	backoff retry.Backoff // of every retried call; zero: retry's defaults
	offsets endOffsets    // log end offsets, for the watermarks
	running atomic.Bool
	ahead   storedAhead // batches stored whose commit a generation's end refused
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
	log := cfg.Logger.With("component", "ingest")
	stage, err := retry.NewStage("ingest", log, cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	return &Ingester{
		cfg: cfg,
		// Every write is checked against the fence of its context (fence.go).
		st:      fence.WrapStore(store, fence.Counter{Refused: m.fenced, Stage: "ingest"}, writePut),
		ix:      fencedIndex{Index: ix, fenced: m.fenced},
		w:       fencedWriter{Writer: w, fenced: m.fenced},
		log:     log,
		m:       m,
		stage:   stage,
		offsets: kafkaOffsets(cfg.Brokers, cfg.Auth, cfg.CallTimeout),
	}, nil
}

// Run consumes Input and Slow in the consumer group GroupID until ctx is
// cancelled; then it finishes and commits the batches in hand (each bounded
// by DrainTimeout), leaves the group and returns. It returns nil after a
// clean stop, and an error when the consumer group cannot be set up or when
// a batch in hand at the stop could not be stored and committed in time (an
// outage: the batch stays uncommitted and is read again, nothing is lost).
// Run returns after every goroutine it started has ended.
func (in *Ingester) Run(ctx context.Context) error {
	if !in.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer in.running.Store(false)

	group, err := consumer.NewGroup(consumer.GroupConfig{
		ID: in.cfg.GroupID, Brokers: in.cfg.Brokers, Auth: in.cfg.Auth, Topics: []string{in.cfg.Input, in.cfg.Slow}, Logger: in.cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("ingest: consumer group %s: %w", in.cfg.GroupID, err)
	}
	lim := newLimiter(in.cfg.SlowRate, min(int(in.cfg.SlowRate), in.cfg.BatchSize))
	in.log.Info("ingest started", "input", in.cfg.Input, "slow", in.cfg.Slow, "group", in.cfg.GroupID)

	var (
		mu   sync.Mutex
		errs []error
	)
	consumer.Generations(ctx, group, in.log.With("group", in.cfg.GroupID), func(gctx context.Context, gen *kafka.Generation) {
		if err := in.runGeneration(ctx, gctx, gen, lim); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	in.log.Info("ingest stopped", "group", in.cfg.GroupID)
	return errors.Join(errs...)
}

// runGeneration consumes the partitions of Input and Slow assigned in gen
// until ctx (stop) or gctx (the generation ended) is done, then finishes and
// commits each partition's batch in hand and returns. It must not return
// before: kafka-go ends the generation when a function started with
// Generation.Start returns.
func (in *Ingester) runGeneration(ctx, gctx context.Context, gen *kafka.Generation, lim *limiter) error {
	var lanes []lane
	assigned := map[string][]int{}
	resumed := map[string]map[int]int64{}
	for _, topic := range []string{in.cfg.Input, in.cfg.Slow} {
		for _, a := range gen.Assignments[topic] {
			offset := in.ahead.start(topic, a.ID, a.Offset)
			if offset != a.Offset {
				if resumed[topic] == nil {
					resumed[topic] = map[int]int64{}
				}
				resumed[topic][a.ID] = offset
			}
			prog := &progress{}
			prog.next.Store(offset)
			r, err := in.newReader(topic, a.ID, offset)
			if err != nil {
				// Unreachable for a fresh reader without a group; without a
				// position nothing can be read, so sit the generation out.
				in.log.Error("partition reader failed", "topic", topic, "partition", a.ID, "err", err)
				for _, l := range lanes {
					_ = l.r.Close()
				}
				select {
				case <-ctx.Done():
				case <-gctx.Done():
				}
				return nil
			}
			l := lane{topic: topic, partition: a.ID, r: r, prog: prog}
			if topic == in.cfg.Slow {
				l.lim = lim
			}
			lanes = append(lanes, l)
			assigned[topic] = append(assigned[topic], a.ID)
		}
	}
	in.log.Info("generation started", "generation", gen.ID, "member", gen.MemberID,
		"input_partitions", slices.Sorted(slices.Values(assigned[in.cfg.Input])),
		"slow_partitions", slices.Sorted(slices.Values(assigned[in.cfg.Slow])))
	// The generation's writes are fenced by its lease (fence.go); a revoked
	// lease ends the lanes as the generation's end does.
	ctx, gctx, stopFence := fence.Keep(ctx, gctx, func(ctx context.Context, lease *fence.Lease) {
		consumer.Fence(ctx, consumer.GroupConfig{ID: in.cfg.GroupID, Brokers: in.cfg.Brokers, Auth: in.cfg.Auth},
			gen, lease, in.log)
	})
	defer stopFence()

	c := &serialCommitter{c: gen}
	if len(resumed) > 0 {
		// The batches the last generation stored but could not commit:
		// committed now, or with the lane's first batch.
		err := c.CommitOffsets(resumed)
		in.log.Info("resuming after batches stored in the last generation", "offsets", resumed, "commit_err", err)
	}
	err := in.generation(ctx, gctx, c, lanes)
	in.log.Info("generation ended", "generation", gen.ID)
	return err
}

// newReader returns a read-committed reader of one partition positioned
// at offset (a committed offset, or kafka.FirstOffset): records of aborted
// transactions and transaction markers never reach ingest (package
// kafka/committed says why kafka-go's Reader cannot do that).
func (in *Ingester) newReader(topic string, partition int, offset int64) (fetcher, error) {
	r, err := consumer.NewCommittedReader(consumer.Partition{
		Brokers: in.cfg.Brokers, Auth: in.cfg.Auth, Topic: topic, Partition: partition, Offset: offset,
		// Above the preset's 10 MiB: room for input of payload's
		// MaxPayload and more in one fetch.
		MaxBytes: 16 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: %s/%d: %w", topic, partition, err)
	}
	return r, nil
}

// serialCommitter sends one commit at a time on the generation's
// coordinator connection, which the lanes of a generation share.
type serialCommitter struct {
	mu sync.Mutex
	c  committer
}

func (s *serialCommitter) CommitOffsets(offsets map[string]map[int]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.CommitOffsets(offsets)
}

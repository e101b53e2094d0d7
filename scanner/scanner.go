package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/topics"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// Defaults of Config.
const (
	DefaultGroupID        = "delayq-scanner"
	DefaultWorkers        = 8
	DefaultBatchSize      = 500
	DefaultCommitInterval = 100 * time.Millisecond
	DefaultDrainTimeout   = 10 * time.Second
	DefaultRetryBackoff   = 100 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	DefaultMaxAttempts    = 8
	DefaultCoalesce       = 50 * time.Millisecond

	// maxBatchSize caps BatchSize: a ZREM of a batch is one command and Redis
	// commands stay at 5,000 arguments or fewer.
	maxBatchSize = 5000
	// removeGrace is how long removing the entries of a produced batch may go
	// on after the task's context ended: produced entries must leave the index
	// or a later scan delivers them a second time.
	removeGrace = 5 * time.Second
	// writeGrace is how long a write that started may go on after the task's
	// context ended: cutting it short would leave produced messages whose
	// entries are not removed. kafka-go's own timeouts end it sooner unless
	// the brokers are unreachable.
	writeGrace = 10 * time.Second
	// maxDrainTimeout keeps DrainTimeout + writeGrace + removeGrace under
	// kafka-go's rebalance timeout (30s): a member that drains longer is
	// dropped from the group while it still scans.
	maxDrainTimeout = 15 * time.Second
	// queueSize is the number of scan tasks queued per worker.
	queueSize = 16
)

// ErrConfig is wrapped by the errors of Config.Validate.
var ErrConfig = errors.New("scanner: invalid config")

// Config configures a Scanner. Zero values mean the documented default.
type Config struct {
	// Brokers are the Kafka bootstrap addresses. Required.
	Brokers []string
	// GroupID is the consumer group on Topic. Default "delayq-scanner".
	GroupID string
	// Topic carries the scan tasks. Default "delay-scan".
	Topic string
	// FailedTopic receives tasks that their business topic refuses for good,
	// with a delay-error header. Default "delay-failed".
	FailedTopic string
	// Workers is the number of scan goroutines per assigned partition.
	// Default 8.
	Workers int
	// BatchSize is the number of entries read from a zset at a time (the
	// ZRANGEBYSCORE LIMIT), fetched from the store and produced together.
	// Default 500, at most 5,000.
	BatchSize int
	// Coalesce makes a worker step a zset whose next entry is not due yet
	// at the next multiple of Coalesce (from the epoch) after that entry's
	// exec_at rather than at the exec_at itself, so that a worker's zsets
	// fall due together and share steps: fewer, larger store Gets and
	// writes for up to Coalesce more lateness. Default 50ms; negative: at
	// the exec_at.
	Coalesce time.Duration
	// CommitInterval is how often the low-water mark of finished scan tasks is
	// committed when it advanced. Default 100ms.
	CommitInterval time.Duration
	// DrainTimeout bounds how long scan tasks in flight continue after a stop
	// or a rebalance. A write or a removal that started may take up to 10s
	// and 5s more; the sum must stay under the group's rebalance timeout
	// (30s), so at most 15s. Default 10s.
	DrainTimeout time.Duration
	// RetryBackoff and MaxBackoff bound the exponential backoff between
	// retries of Redis, store and Kafka calls. Defaults 100ms and 5s.
	RetryBackoff time.Duration
	MaxBackoff   time.Duration
	// MaxAttempts is how many writes of a message may fail with "unknown
	// topic" before the message goes to FailedTopic. Default 8.
	MaxAttempts int
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// Registerer registers the metrics; nil does not register them.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.GroupID == "" {
		c.GroupID = DefaultGroupID
	}
	if c.Topic == "" {
		c.Topic = topics.Scan
	}
	if c.FailedTopic == "" {
		c.FailedTopic = topics.Failed
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Coalesce == 0 {
		c.Coalesce = DefaultCoalesce
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every problem of the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if len(c.Brokers) == 0 {
		bad("no brokers")
	}
	if c.Topic == c.FailedTopic {
		bad("topic and failed topic are both %q", c.Topic)
	}
	if c.Workers < 1 {
		bad("workers %d < 1", c.Workers)
	}
	if c.BatchSize < 1 || c.BatchSize > maxBatchSize {
		bad("batch size %d not in [1, %d]", c.BatchSize, maxBatchSize)
	}
	if c.CommitInterval < 0 {
		bad("negative commit interval %s", c.CommitInterval)
	}
	if c.DrainTimeout < 0 || c.DrainTimeout > maxDrainTimeout {
		bad("drain timeout %s not in [0, %s]", c.DrainTimeout, maxDrainTimeout)
	}
	if c.RetryBackoff < 0 || c.MaxBackoff < c.RetryBackoff {
		bad("backoff range [%s, %s] invalid", c.RetryBackoff, c.MaxBackoff)
	}
	if c.MaxAttempts < 1 {
		bad("max attempts %d < 1", c.MaxAttempts)
	}
	return errors.Join(errs...)
}

// Index is the part of the Redis index the scanner uses (zset.Index).
type Index interface {
	// Due returns up to limit entries of zset key with ExecAt <= until.
	Due(ctx context.Context, key string, until int64, limit int) ([]zset.Entry, error)
	// Remove removes exactly these entries from zset key.
	Remove(ctx context.Context, key string, entries []zset.Entry) error
}

// Store is the part of the payload store the scanner uses.
type Store interface {
	// Get returns the tasks of refs, aligned with refs; nil means no row.
	Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error)
}

// Writer produces messages to the topics they name (per-message Topic),
// synchronously, with RequireAll (producer.New).
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Scanner consumes scan tasks and delivers due tasks. Build it with New.
type Scanner struct {
	cfg   Config
	ix    Index
	store Store
	w     Writer
	log   *slog.Logger
	m     *metrics
}

// New checks cfg and returns a Scanner. It does not connect to anything.
func New(cfg Config, ix Index, store Store, w Writer) (*Scanner, error) {
	cfg.setDefaults()
	err := cfg.Validate()
	if ix == nil || store == nil || w == nil {
		err = errors.Join(err, fmt.Errorf("%w: index, store and writer are required", ErrConfig))
	}
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Scanner{
		cfg:   cfg,
		ix:    ix,
		store: store,
		w:     w,
		log:   cfg.Logger.With("component", "scanner"),
		m:     m,
	}, nil
}

// Run consumes scan tasks until ctx is cancelled, then stops fetching, lets
// the scan tasks in flight finish (bounded by DrainTimeout), commits, leaves
// the group and returns nil. It returns an error only when the consumer group
// cannot be set up. Run returns after every goroutine it started has ended.
func (s *Scanner) Run(ctx context.Context) error {
	group, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                s.cfg.GroupID,
		Brokers:           s.cfg.Brokers,
		Topics:            []string{s.cfg.Topic},
		StartOffset:       kafka.FirstOffset,
		HeartbeatInterval: consumer.HeartbeatInterval,
		SessionTimeout:    consumer.SessionTimeout,
		JoinGroupBackoff:  consumer.JoinBackoff,
		ErrorLogger: kafka.LoggerFunc(func(format string, args ...any) {
			s.log.Warn("consumer group", "detail", fmt.Sprintf(format, args...))
		}),
	})
	if err != nil {
		return fmt.Errorf("scanner: consumer group %s: %w", s.cfg.GroupID, err)
	}
	s.log.Info("scanner started", "group", s.cfg.GroupID, "topic", s.cfg.Topic, "workers", s.cfg.Workers)

	var wg sync.WaitGroup
	for {
		gen, err := group.Next(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			s.log.Warn("join group failed", "group", s.cfg.GroupID, "err", err)
			sleep(ctx, s.cfg.RetryBackoff)
			continue
		}
		wg.Add(1)
		gen.Start(func(gctx context.Context) {
			defer wg.Done()
			s.runGeneration(ctx, gctx, gen)
		})
	}

	// Close ends the current generation (whose goroutines already drain,
	// because ctx is done), waits for them, then leaves the group. Closing
	// before the generation's goroutines return keeps the group from joining a
	// new generation in between.
	_ = group.Close()
	wg.Wait()
	s.log.Info("scanner stopped", "group", s.cfg.GroupID)
	return nil
}

// runGeneration consumes the partitions of Topic assigned in gen until ctx
// (stop) or gctx (generation ended) is done, then drains and commits. It must
// not return before then: kafka-go ends the generation when any function
// started with Generation.Start returns.
func (s *Scanner) runGeneration(ctx, gctx context.Context, gen *kafka.Generation) {
	assigned := gen.Assignments[s.cfg.Topic]
	ids := make([]int, len(assigned))
	for i, a := range assigned {
		ids[i] = a.ID
	}
	s.log.Info("generation started", "generation", gen.ID, "member", gen.MemberID, "partitions", ids)

	if len(assigned) == 0 {
		// Nothing assigned (more members than partitions): returning would end
		// the generation and make the group rebalance again at once.
		select {
		case <-ctx.Done():
		case <-gctx.Done():
		}
		return
	}

	parts := make([]*partition, len(assigned))
	var wg sync.WaitGroup
	for i, a := range assigned {
		p := newPartition(a.ID)
		parts[i] = p
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.consume(ctx, gctx, p, a.Offset)
		}()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()

	tick := time.NewTicker(s.cfg.CommitInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.commit(gen, parts)
		case <-finished:
			// Final commit; the generation's connection stays open until this
			// function returns. Commits are accepted while a rebalance is
			// being prepared, so retry a transient failure briefly.
			for attempt := 0; attempt < 3 && !s.commit(gen, parts); attempt++ {
				time.Sleep(s.cfg.RetryBackoff)
			}
			s.log.Info("generation ended", "generation", gen.ID)
			return
		}
	}
}

// commit commits the low-water marks that advanced since the last commit. It
// reports whether nothing is left to commit.
func (s *Scanner) commit(gen *kafka.Generation, parts []*partition) bool {
	offsets := make(map[int]int64)
	for _, p := range parts {
		if off, ok := p.pending(); ok {
			offsets[p.id] = off
		}
	}
	if len(offsets) == 0 {
		return true
	}
	if err := gen.CommitOffsets(map[string]map[int]int64{s.cfg.Topic: offsets}); err != nil {
		s.m.commitErrors.Inc()
		s.log.Warn("commit failed", "generation", gen.ID, "offsets", offsets, "err", err)
		return false
	}
	for _, p := range parts {
		if off, ok := offsets[p.id]; ok {
			p.committed(off)
		}
	}
	return true
}

// sleep waits d or until ctx is done; it reports whether ctx is still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

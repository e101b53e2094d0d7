package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/fence"
	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/scanner/schedule"
	"github.com/delayq/delayq/zset"
)

// ErrRunning is returned by Run while another Run of the same Scanner runs.
var ErrRunning = errors.New("scanner: already running")

// Index is the part of the Redis index the scanner uses (zset.Reader and
// zset.Writer).
type Index interface {
	// DueMany returns, for each range, up to limit entries of its zset
	// with ExecAt <= its Until, lowest first.
	DueMany(ctx context.Context, rs []zset.Range, limit int) ([][]zset.Entry, error)
	// RemoveMany removes exactly these entries from their zsets.
	RemoveMany(ctx context.Context, rs []zset.Removal) error
	// Add indexes the next occurrences of recurring tasks (recur.go). It
	// is idempotent; an error wrapping zset.ErrBadEntry refuses an entry
	// for good.
	Add(ctx context.Context, now time.Time, entries []zset.Entry) error
	// Earliest returns the lowest ExecAt in [from, until] of the entries
	// still indexed, false when there is none (release.go).
	Earliest(ctx context.Context, from, until int64) (int64, bool, error)
}

// Store is the part of the payload store the scanner uses.
type Store interface {
	// Get returns the tasks of refs, aligned with refs; nil means no row.
	Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error)
	// Put stores the next occurrences of recurring tasks and their cancel
	// markers (recur.go).
	Put(ctx context.Context, tasks []payload.Task) error
	// PutIDs and GetIDs record a next occurrence as its name's current due
	// time and read back whether the name is cancelled by id (recur.go).
	payload.IDStore
}

// Writer produces messages to the topics they name (per-message Topic),
// synchronously, with RequireAll (producer.New).
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Hold tells how far deliveries may go (watermark.Follower).
type Hold = schedule.Hold

// Scanner consumes scan tasks and delivers due tasks. Build it with New.
type Scanner struct {
	cfg    Config
	ix     Index
	store  Store
	w      Writer // batches
	single Writer // one message per produce request; set by New or Run
	log    *slog.Logger
	m      *metrics
	stage  *retry.Stage
	policy retry.Policy
	// missingLog limits the WARN lines about missing rows.
	missingLog *limiter
	// authLog limits the WARN lines about unauthorized topics.
	authLog *limiter
	// plan is the scheduling rules' settings (schedule).
	plan   schedule.Config
	recurM *recurMetrics
	cm     *controlMetrics

	running atomic.Bool
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
	rm, err := newRecurMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	cm, err := newControlMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "scanner")
	stage, err := retry.NewStage("scanner", log, cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("scanner: %w", err)
	}
	// Every write is checked against the fence of its context (fence.go).
	if cfg.Controls != nil {
		cfg.Controls = fencedControls{controls: cfg.Controls, fenced: m.fenced}
	}
	var single Writer
	if cfg.SingleWriter != nil {
		single = fencedWriter{Writer: cfg.SingleWriter, fenced: m.fenced}
	}
	return &Scanner{
		cfg:        cfg,
		plan:       schedule.Config{Prefetch: cfg.Prefetch, Coalesce: cfg.Coalesce, BatchSize: cfg.BatchSize, Hold: cfg.Hold},
		ix:         fencedIndex{Index: ix, fenced: m.fenced},
		store:      fence.WrapStore(store, fence.Counter{Refused: m.fenced, Stage: "scanner"}, writeStore),
		w:          fencedWriter{Writer: w, fenced: m.fenced},
		single:     single,
		log:        log,
		m:          m,
		stage:      stage,
		policy:     retry.Policy{Backoff: cfg.Backoff, Permanent: isFenced},
		missingLog: newLimiter(missingLogRate),
		authLog:    newLimiter(missingLogRate),
		recurM:     rm,
		cm:         cm,
	}, nil
}

// Run consumes scan tasks until ctx is cancelled, then stops fetching,
// drains (bounded by DrainTimeout), commits, leaves the group and returns
// nil. It returns an error only when the consumer group cannot be set up.
// Run returns after every goroutine it started has ended.
func (s *Scanner) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer s.running.Store(false)
	group, err := consumer.NewGroup(consumer.GroupConfig{
		ID: s.cfg.GroupID, Brokers: s.cfg.Brokers, Auth: s.cfg.Auth, Topics: []string{s.cfg.Topic}, Logger: s.log,
	})
	if err != nil {
		return fmt.Errorf("scanner: consumer group %s: %w", s.cfg.GroupID, err)
	}
	if s.cfg.SingleWriter == nil {
		w := producer.New(producer.Config{Brokers: s.cfg.Brokers, Auth: s.cfg.Auth, BatchSize: 1, Logger: s.log})
		s.single = fencedWriter{Writer: confirmed{Writer: w, brokers: s.cfg.Brokers, auth: s.cfg.Auth}, fenced: s.m.fenced}
		defer func() {
			if err := w.Close(); err != nil {
				s.log.Warn("close single writer", "err", err)
			}
			s.single = nil
		}()
	}
	s.log.Info("scanner started", "group", s.cfg.GroupID, "topic", s.cfg.Topic, "workers", s.cfg.Workers)

	if s.cfg.Controls != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			newReleaser(s).run(ctx)
		}()
		defer func() { <-done }()
	}
	consumer.Generations(ctx, group, s.log.With("group", s.cfg.GroupID), func(gctx context.Context, gen *kafka.Generation) {
		s.runGeneration(ctx, gctx, gen)
	})
	s.log.Info("scanner stopped", "group", s.cfg.GroupID)
	return nil
}

// runGeneration consumes the partitions of Topic assigned in gen until ctx
// (stop) or gctx (generation ended) is done, then drains and commits. It must
// not return before then: kafka-go ends the generation when any function
// started with Generation.Start returns. kafka-go also stops heartbeating
// when the generation ends, which is why the drain and the final commit
// are bounded by the session (DrainTimeout, commitReserve).
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

	wctx, gctx, stopFence := s.leaseGeneration(ctx, gctx, gen)
	defer stopFence()

	owner := s.owner(ctx)
	parts := make([]*partition, len(assigned))
	var wg sync.WaitGroup
	for i, a := range assigned {
		p := newPartition(a.ID)
		p.owns = owner
		parts[i] = p
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.consume(wctx, gctx, p, a.Offset)
		}()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()

	tick := time.NewTicker(s.cfg.CommitInterval)
	defer tick.Stop()
	failing := false // one line when commits start failing, one when they succeed again
	for {
		select {
		case <-tick.C:
			err := s.commit(gen, parts)
			switch {
			case err != nil && !failing:
				failing = true
				s.log.Log(ctx, commitLevel(err), "commit failed, committing again every tick until it succeeds", "generation", gen.ID, "err", err)
			case err == nil && failing:
				failing = false
				s.log.Info("commit recovered", "generation", gen.ID)
			}
		case <-finished:
			// Final commit, before the member leaves or rejoins; the
			// generation's connection stays open until this function
			// returns. Commits are accepted while a rebalance is being
			// prepared.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitReserve)
			err := s.stage.Do(cctx, "commit", retry.Policy{Backoff: s.cfg.Backoff, Permanent: fenced},
				func(context.Context) error { return s.commit(gen, parts) })
			cancel()
			if err != nil {
				s.log.Warn("final commit failed: the next owner scans the finished tasks again",
					"generation", gen.ID, "err", err)
			}
			s.log.Info("generation ended", "generation", gen.ID)
			return
		}
	}
}

// leaseGeneration keeps the lease of gen (fence.go) until the returned stop is
// called: it is valid while the coordinator counts this member and
// revoked once it gave the partitions away (a process paused past its
// session). It returns the context the generation's writes are made in
// (carrying the lease), and gctx ended also when the lease is revoked, so
// that a revoked lease ends the partitions' work as the generation's end
// does.
func (s *Scanner) leaseGeneration(ctx, gctx context.Context, gen *kafka.Generation) (wctx, leased context.Context, stop func()) {
	return fence.Keep(ctx, gctx, func(ctx context.Context, lease *fence.Lease) {
		consumer.Fence(ctx, consumer.GroupConfig{ID: s.cfg.GroupID, Brokers: s.cfg.Brokers, Auth: s.cfg.Auth},
			gen, lease, s.log)
	})
}

// commit commits the low-water marks that advanced since the last commit.
func (s *Scanner) commit(gen *kafka.Generation, parts []*partition) error {
	offsets := make(map[int]int64)
	for _, p := range parts {
		if off, ok := p.pending(); ok {
			offsets[p.id] = off
		}
	}
	if len(offsets) == 0 {
		return nil
	}
	if err := gen.CommitOffsets(map[string]map[int]int64{s.cfg.Topic: offsets}); err != nil {
		s.m.commitErrors.Inc()
		return fmt.Errorf("commit %v: %w", offsets, err)
	}
	for _, p := range parts {
		if off, ok := offsets[p.id]; ok {
			p.committed(off)
		}
	}
	return nil
}

// fenced reports a commit error that no retry cures: the member is no
// longer part of the generation.
func fenced(err error) bool {
	return errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.UnknownMemberId) ||
		errors.Is(err, kafka.FencedInstanceID)
}

// commitLevel logs routine group churn below WARN.
func commitLevel(err error) slog.Level {
	if fenced(err) || errors.Is(err, kafka.RebalanceInProgress) {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// owner returns a function that reports whether a zset's scan tasks
// belong on a partition at Topic's current partition count: the partition
// the dispatcher's writer (producer.New, kafka.Hash) sends them to. When
// the topic grows, a zset's scan tasks move to another partition, maybe
// of another member, while older ones wait on the old partition; scanning
// only where a zset belongs keeps one zset in one goroutine of the group.
// The older scan task is skipped (the dispatcher emits another every tick
// while the zset holds due entries). Without the count (the metadata call
// failed) every scan task is scanned where it comes.
func (s *Scanner) owner(ctx context.Context) func(zset string, partition int) bool {
	n, err := partitionCount(ctx, s.cfg.Brokers, s.cfg.Auth, s.cfg.Topic)
	if err != nil {
		s.log.Warn("partition count unknown: scanning scan tasks wherever they come", "topic", s.cfg.Topic, "err", err)
		return func(string, int) bool { return true }
	}
	return func(zset string, partition int) bool { return partitionOf(zset, n) == partition }
}

// partitionOf is the partition of n that kafka.Hash, producer.New's
// balancer, gives the key zset.
func partitionOf(zset string, n int) int {
	ps := make([]int, n)
	for i := range ps {
		ps[i] = i
	}
	return (&kafka.Hash{}).Balance(kafka.Message{Key: []byte(zset)}, ps...)
}

// partitionCount asks a broker (not a client's metadata cache) how many
// partitions topic has.
func partitionCount(ctx context.Context, brokers []string, auth *kafkaauth.Auth, topic string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var errs []error
	for _, b := range brokers {
		conn, err := auth.Dialer(0).DialContext(ctx, "tcp", b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ps, err := conn.ReadPartitions(topic)
		conn.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return len(ps), nil
	}
	return 0, fmt.Errorf("partitions of %s: %w", topic, errors.Join(errs...))
}

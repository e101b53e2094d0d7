package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/internal/klog"
	"github.com/delayq/delayq/kafka/kafkaauth"
)

// Consumer-group timing shared by every group delayq runs (NewGroup,
// NewReader, and ingest's group).
//
// kafka-go's defaults (3 s heartbeats, 30 s session, 5 s join backoff)
// leave a crashed member's partitions idle for half a minute. The
// coordinator declares a member dead SessionTimeout after its last
// heartbeat, so after a kill -9 the other members take its partitions
// about SessionTimeout later (plus a rebalance). 6 s is the smallest
// session a broker accepts by default (group.min.session.timeout.ms).
//
// The same clock bounds a graceful stop and a rebalance: kafka-go stops
// heartbeating as soon as a generation ends, while the member still
// drains what it holds, so a member's drain, final commit and
// LeaveGroup/JoinGroup must fit in SessionTimeout − HeartbeatInterval
// (MaxDrain). A member that drains longer is declared dead and its
// partitions move while it still works on them.
const (
	HeartbeatInterval = time.Second
	SessionTimeout    = 6 * time.Second
	JoinBackoff       = 500 * time.Millisecond
	// PartitionWatchInterval is how often a group member asks for the
	// partition count of its topics; a change ends the generation, so new
	// partitions are consumed at most this long (plus a rebalance) after
	// they were added.
	PartitionWatchInterval = 5 * time.Second
	// MaxDrain is the longest a member may keep working after its
	// generation ended (drain, final commit, leave or rejoin included)
	// before the coordinator may hand its partitions to another member.
	MaxDrain = SessionTimeout - HeartbeatInterval
)

// GroupConfig configures NewGroup. ID and Topics are required.
type GroupConfig struct {
	ID      string
	Brokers []string // default admin.DefaultBroker
	// Auth secures the connections (TLS, SASL); nil: plaintext.
	Auth   *kafkaauth.Auth
	Topics []string
	// Logger receives kafka-go's group log (rebalances at INFO, the rest at
	// WARN); nil discards it.
	Logger *slog.Logger
}

// NewGroup returns a kafka-go consumer group for delayq's stages that run
// the Generation API: the shared timing above, watching the partition
// count of Topics (a topic that grows is rebalanced onto at once), and
// the first offset for a partition without a committed offset. Close it
// when done: Close waits for the generation's functions and leaves the
// group.
func NewGroup(cfg GroupConfig) (*kafka.ConsumerGroup, error) {
	var errs []error
	if cfg.ID == "" {
		errs = append(errs, fmt.Errorf("%w: no group id", ErrConfig))
	}
	if len(cfg.Topics) == 0 {
		errs = append(errs, fmt.Errorf("%w: no topics", ErrConfig))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	gc := groupConfig(cfg)
	g, err := kafka.NewConsumerGroup(gc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return g, nil
}

func groupConfig(cfg GroupConfig) kafka.ConsumerGroupConfig {
	gc := kafka.ConsumerGroupConfig{
		ID:                     cfg.ID,
		Brokers:                cfg.Brokers,
		Dialer:                 cfg.Auth.Dialer(0),
		Topics:                 cfg.Topics,
		StartOffset:            kafka.FirstOffset,
		HeartbeatInterval:      HeartbeatInterval,
		SessionTimeout:         SessionTimeout,
		JoinGroupBackoff:       JoinBackoff,
		WatchPartitionChanges:  true,
		PartitionWatchInterval: PartitionWatchInterval,
		GroupBalancers:         balancers,
	}
	if len(gc.Brokers) == 0 {
		gc.Brokers = []string{admin.DefaultBroker}
	}
	if cfg.Logger != nil {
		gc.ErrorLogger = klog.Logger(cfg.Logger.With("component", "kafka_group"))
	}
	return gc
}

// Generations joins group one generation after another until ctx ends and
// runs fn for each through Generation.Start (kafka-go ends a generation
// when its function returns, so fn must last until gctx or ctx is done). A
// failed join is tried again after JoinBackoff; joins failing for another
// reason than a rebalance log one WARN, and one INFO when a join succeeds
// again (the rest, and routine rebalances, at DEBUG). When ctx ends it closes group, which
// ends the current generation, waits for its fn (whose final commits go
// out in the generation they belong to) and only then leaves the group;
// closing before fn returns keeps the group from joining a new generation
// in between. It returns once every fn has returned.
func Generations(ctx context.Context, group *kafka.ConsumerGroup, log *slog.Logger,
	fn func(gctx context.Context, gen *kafka.Generation)) {
	var wg sync.WaitGroup
	var failingSince time.Time // of the joins failing for another reason than a rebalance
	for {
		gen, err := group.Next(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			// A coordinator that moved or is away fails every join until
			// it is back: one WARN, one INFO once a join succeeds.
			level := slog.LevelWarn
			switch {
			case errors.Is(err, kafka.RebalanceInProgress):
				level = slog.LevelDebug // routine: another member joined or left
			case !failingSince.IsZero():
				level = slog.LevelDebug
			default:
				failingSince = time.Now()
			}
			log.Log(ctx, level, "join group failed, joining again", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(JoinBackoff):
			}
			continue
		}
		if !failingSince.IsZero() {
			log.Info("joined the group again", "failing_for", time.Since(failingSince).Round(time.Millisecond).String())
			failingSince = time.Time{}
		}
		wg.Add(1)
		gen.Start(func(gctx context.Context) {
			defer wg.Done()
			fn(gctx, gen)
		})
	}
	_ = group.Close()
	wg.Wait()
}

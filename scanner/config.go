package scanner

import (
	"errors"
	"fmt"
	"github.com/delayq/delayq/internal/tracing"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// Defaults of Config.
const (
	DefaultGroupID        = "delayq-scanner"
	DefaultWorkers        = 8
	DefaultBatchSize      = 500
	DefaultCommitInterval = 100 * time.Millisecond
	DefaultDrainTimeout   = 3 * time.Second
	DefaultMaxAttempts    = 8
	DefaultCoalesce       = 50 * time.Millisecond
	DefaultPrefetch       = 50 * time.Millisecond

	// MaxDrainTimeout caps DrainTimeout: the drain, the final commit
	// (commitReserve) and leaving or rejoining the group must end before
	// the coordinator may declare the member dead (consumer.MaxDrain, 5s),
	// or another member scans the zsets while this one still removes what
	// it produced.
	MaxDrainTimeout = consumer.MaxDrain - commitReserve
	// MaxPrefetch bounds Config.Prefetch: a cancel stored between a step's
	// load and its write no longer wins.
	MaxPrefetch = time.Second

	// maxBatchSize caps BatchSize: a ZREM of a batch is one command and Redis
	// commands stay at 5,000 arguments or fewer.
	maxBatchSize = 5000
	// commitReserve is the part of consumer.MaxDrain kept for the final
	// commit and the LeaveGroup or JoinGroup after the drain.
	commitReserve = time.Second
	// queueSize is the number of scan tasks queued per worker.
	queueSize = 16
	// maxGroup caps the zsets a worker steps together. The zsets of a
	// dense segment hold at most ~128 entries each (shard families), so a
	// step is up to ~16k entries; the store reads the rows of a step that
	// share a salt with one scan, and the more of them it asks for, the
	// closer they sit (measured against 32: docs/performance.md, "scans
	// instead of point Gets").
	maxGroup = 128
	// maxParked caps the deliveries a worker holds aside (see park.go);
	// past it the worker only retries those until some settle.
	maxParked = 1000
)

// ErrConfig is wrapped by the errors of Config.Validate.
var ErrConfig = errors.New("scanner: invalid config")

// Config configures a Scanner. Zero values mean the documented default.
type Config struct {
	// Brokers are the Kafka bootstrap addresses. Required.
	Brokers []string
	// Auth secures the Kafka connections (TLS, SASL); nil: plaintext.
	Auth *kafkaauth.Auth
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
	// Prefetch is how long before their exec_at a step reads tasks from
	// the store: a zset that waits for its next entry wakes Prefetch
	// early, takes the entries due by its wake + Prefetch (within the
	// Hold's cutoff, so never more than the Hold's lead), loads their rows
	// and waits for the latest exec_at among them before it delivers them,
	// so the store's answer time is not part of the lateness. At most
	// Coalesce takes effect (a step's wait then never overlaps the next
	// wake of the worker's zsets), so no prefetch without coalescing. A
	// cancel stored after the load and before the exec_at (sent less than
	// the Hold's lead, 2 s, before the task is due: no promise covers it)
	// no longer wins. Default 50ms; negative: none (load at the exec_at).
	Prefetch time.Duration
	// Hold holds deliveries back while ingest trails (a cancel may be
	// queued behind a stalled input partition): an entry is delivered only
	// when its exec_at <= Hold.Cutoff(now). Nil: every entry at its
	// exec_at. delayd passes a watermark.Follower.
	Hold Hold
	// CommitInterval is how often the low-water mark of finished scan tasks is
	// committed when it advanced. Default 100ms.
	CommitInterval time.Duration
	// DrainTimeout bounds the whole drain after a stop or a rebalance:
	// steps in flight, the writes they started and the removal of what was
	// produced. The first two thirds are for the steps (no retry and no
	// new call starts after that), the last third for the removals. It
	// must leave time for the final commit inside the group's session, so
	// at most MaxDrainTimeout (4s). Default 3s.
	DrainTimeout time.Duration
	// Backoff is the backoff between retries of Redis, store and Kafka
	// calls and of deliveries held aside. Zero fields: internal/retry's
	// defaults (100ms, capped at 5s).
	Backoff retry.Backoff
	// MaxAttempts is how many writes of a message, each alone in its
	// produce request, may be answered "unknown topic" before the message
	// goes to FailedTopic. Default 8 (about 11s with the default backoff).
	MaxAttempts int
	// SingleWriter produces each message in a produce request of its own,
	// so that a broker's answer (too large, unknown topic) concerns that
	// message alone; the scanner writes a message through it after a
	// write of a batch failed for it. Its "unknown topic" answers must come
	// from the brokers, not from a metadata cache that an outage leaves
	// stale, or an outage would look like an unknown topic. Default:
	// producer.New on Brokers with a batch size of 1, whose "unknown
	// topic" answers are confirmed by a metadata request of their own
	// (admin.Missing), built by Run and closed when Run returns.
	SingleWriter Writer
	// MaxDelay bounds the gap between two occurrences of a recurring task
	// (delayd's --max-delay): a next occurrence further than that after
	// the current one ends the series with an ERROR line. Default
	// payload.DefaultMaxDelay (720h).
	MaxDelay time.Duration
	// Controls are the operators' topic controls (topicctl.Store): pause,
	// rate and default expiry. Run releases held tasks on a goroutine of
	// its own (release.go). Nil: no controls (a delay-expire-after header
	// still expires its task).
	Controls Controls
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// Registerer registers the metrics; nil does not register them.
	Registerer prometheus.Registerer
	// Tracer starts a new trace per delivery, linked to the producer's
	// span (internal/tracing); nil: the headers pass through untouched.
	Tracer *tracing.Tracer
}

func (c *Config) setDefaults() {
	if c.GroupID == "" {
		c.GroupID = DefaultGroupID
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = payload.DefaultMaxDelay
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
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Coalesce == 0 {
		c.Coalesce = DefaultCoalesce
	}
	switch {
	case c.Prefetch == 0:
		c.Prefetch = DefaultPrefetch
	case c.Prefetch < 0:
		c.Prefetch = 0
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
	if c.MaxDelay < 0 {
		bad("negative max delay %s", c.MaxDelay)
	}
	if c.DrainTimeout < 0 || c.DrainTimeout > MaxDrainTimeout {
		bad("drain timeout %s not in [0, %s]", c.DrainTimeout, MaxDrainTimeout)
	}
	if c.Backoff.Base < 0 || c.Backoff.Max < 0 || (c.Backoff.Max > 0 && c.Backoff.Max < c.Backoff.Base) {
		bad("backoff range [%s, %s] invalid", c.Backoff.Base, c.Backoff.Max)
	}
	if c.Prefetch > MaxPrefetch {
		bad("prefetch %s > %s", c.Prefetch, MaxPrefetch)
	}
	if c.MaxAttempts < 1 {
		bad("max attempts %d < 1", c.MaxAttempts)
	}
	return errors.Join(errs...)
}

package ingest

import (
	"errors"
	"fmt"
	"github.com/delayq/delayq/internal/tracing"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/watermark"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// Defaults of Config.
const (
	DefaultGroupID     = "delayq-ingest"
	DefaultSlowRate    = 1000
	DefaultBatchSize   = 4000
	DefaultBatchWait   = 20 * time.Millisecond
	DefaultBatchBytes  = 16 << 20
	DefaultCallTimeout = 10 * time.Second
	// DefaultRescheduleGrace is how long a reschedule whose task is not
	// stored yet waits for it (by the reschedule's record timestamp).
	DefaultRescheduleGrace = 30 * time.Second
	// DefaultDrainTimeout is half the group session timeout: ample for a
	// batch in hand that meets no outage, well inside MaxDrainTimeout.
	DefaultDrainTimeout = consumer.SessionTimeout / 2
	// MaxDrainTimeout caps DrainTimeout. The drain (the batch in hand and
	// its commit) and then leaving or rejoining the group (leaveReserve)
	// must end before the coordinator may declare the member dead
	// (consumer.MaxDrain) and hand its partitions to another member, which
	// would read the batch again: a task the scanner already delivered and
	// removed would come back, a duplicate.
	MaxDrainTimeout = consumer.MaxDrain - leaveReserve

	// leaveReserve is the part of consumer.MaxDrain kept for the LeaveGroup
	// or JoinGroup after the drain.
	leaveReserve = time.Second
)

// ErrConfig is wrapped by every error Validate reports.
var ErrConfig = errors.New("ingest: invalid config")

// Config configures an Ingester. The zero value of every field but Brokers
// means its default.
type Config struct {
	// Brokers are the Kafka bootstrap addresses. Required.
	Brokers []string
	// Auth secures the Kafka connections (TLS, SASL); nil: plaintext.
	Auth *kafkaauth.Auth
	// GroupID is the consumer group that shares the partitions of Input and
	// Slow among the ingesters. Default "delayq-ingest".
	GroupID string

	// Input is the main input topic. Default delay-input.
	Input string
	// Slow is the rate-limited input topic. Default delay-input-slow.
	Slow string
	// Failed is where messages that can never be accepted go. Default
	// delay-failed.
	Failed string

	// SlowRate caps the slow topic, in messages per second (per process,
	// over all its slow partitions), so a backfill written there cannot
	// crowd out live input. Default 1000.
	SlowRate float64
	// BatchSize is the most messages of one partition handled (and
	// committed) together: large enough to amortize a store round trip
	// and, in a dense segment, a Redis script per zset touched, small
	// enough to keep a batch's latency low. Default 4000 (against 1000 and
	// 8000: docs/performance.md, "Submit: batch sizes").
	BatchSize int
	// BatchBytes closes a batch early once its messages' keys, values and
	// headers add up to this many bytes, so that large payloads do not
	// make BatchSize messages a batch of gigabytes. Default 16 MiB.
	BatchBytes int
	// BatchWait is how long a batch stays open after its first message, so
	// a trickle of input still makes batches of a few messages. Default 20ms.
	BatchWait time.Duration

	// Decode validates input messages. Its AllowTopic, whatever it is, never
	// allows Input, Slow or Failed nor an internal topic as a destination;
	// nil is the default allow-list (topics.Allow(nil)).
	Decode payload.DecodeConfig

	// CallTimeout bounds one attempt of one store call or failed-topic
	// write, so a hung connection turns into a retry instead of a stall
	// that never ends. Default 10s.
	CallTimeout time.Duration

	// RescheduleGrace is how long a reschedule whose task is not stored
	// yet (still in another partition or in Slow) waits for it in the id
	// row, counted from the reschedule's record timestamp; one read older
	// than that with no task goes to Failed, and none moves a task
	// recorded that long after it (taskstate's doc, "Unknown ids").
	// Default 30s.
	RescheduleGrace time.Duration
	// Retention is how long the id rows an op flag guards outlive their
	// due time (the store's retention, delayd's --retention); an op flag
	// is kept Decode.MaxDelay + Retention, saturating. Default 7 days.
	Retention time.Duration
	// DrainTimeout bounds finishing and committing the batch in hand once
	// Run's ctx is cancelled or the consumer-group generation ends, at most
	// MaxDrainTimeout so that the batch is committed before the partition's
	// next owner reads it. A batch that meets an outage then stays
	// uncommitted and is read again. Default consumer.SessionTimeout / 2.
	DrainTimeout time.Duration

	// Marks receives, every MarkEvery, the watermark of each partition of
	// Input and Slow this member owns (package internal/watermark): the
	// scanner holds deliveries back while a partition of Input, and the
	// cancels queued in it, trails; the repair reads both topics' to know
	// which index writes a failover or restart can have taken. Nil
	// publishes none.
	Marks Marks
	// MarkEvery is the period of the watermarks. Default 200ms.
	MarkEvery time.Duration

	// Replicas, when set, makes every batch wait until its Redis writes
	// reached the replicas (redisconn.Replicas: WAIT, delayd's
	// --redis-min-replicas) before its offsets are committed, so that a
	// failover cannot lose an entry of a committed task (replicas.go).
	// Nil commits once the master acknowledged the writes.
	Replicas Replicas

	// Logger receives the ingester's logs; nil discards them.
	Logger *slog.Logger
	// Registerer gets the ingester's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Tracer records a span per delay-input message, a child of its
	// traceparent (internal/tracing); nil: none.
	Tracer *tracing.Tracer
}

func (c *Config) setDefaults() {
	if c.GroupID == "" {
		c.GroupID = DefaultGroupID
	}
	if c.Input == "" {
		c.Input = topics.Input
	}
	if c.Slow == "" {
		c.Slow = topics.Slow
	}
	if c.Failed == "" {
		c.Failed = topics.Failed
	}
	if c.SlowRate == 0 {
		c.SlowRate = DefaultSlowRate
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchWait == 0 {
		c.BatchWait = DefaultBatchWait
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.RescheduleGrace == 0 {
		c.RescheduleGrace = DefaultRescheduleGrace
	}
	if c.MarkEvery == 0 {
		c.MarkEvery = watermark.DefaultPoll
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	allow := c.Decode.AllowTopic
	if allow == nil {
		allow = topics.Allow(nil)
	}
	input, slow, failed := c.Input, c.Slow, c.Failed
	c.Decode.AllowTopic = func(topic string) bool {
		if topic == input || topic == slow || topic == failed || topics.Internal(topic) {
			return false
		}
		return allow(topic)
	}
}

// Validate reports every problem of c at once. It expects defaults applied.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if len(c.Brokers) == 0 {
		bad("brokers: none given")
	}
	for _, b := range c.Brokers {
		if b == "" {
			bad("brokers: empty address")
			break
		}
	}
	if c.Input == c.Slow || c.Input == c.Failed || c.Slow == c.Failed {
		bad("topics: input %q, slow %q and failed %q must differ", c.Input, c.Slow, c.Failed)
	}
	if c.SlowRate < 0 {
		bad("slow rate: %v < 0", c.SlowRate)
	}
	if c.BatchSize < 0 {
		bad("batch size: %d < 0", c.BatchSize)
	}
	if c.BatchWait < 0 {
		bad("batch wait: %v < 0", c.BatchWait)
	}
	if c.BatchBytes < 0 {
		bad("batch bytes: %d < 0", c.BatchBytes)
	}
	if err := c.Decode.Validate(); err != nil {
		bad("decode: %w", err)
	}
	if c.CallTimeout < 0 {
		bad("call timeout: %v < 0", c.CallTimeout)
	}
	if c.DrainTimeout < 0 || c.DrainTimeout > MaxDrainTimeout {
		bad("drain timeout: %v not in [0, %v]", c.DrainTimeout, MaxDrainTimeout)
	}
	if c.MarkEvery < 0 {
		bad("mark every: %v < 0", c.MarkEvery)
	}
	return errors.Join(errs...)
}

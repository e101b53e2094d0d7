package ingest

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/kafka/topics"
	"github.com/delayq/delayq/payload"
)

// Defaults of Config.
const (
	DefaultGroupID     = "delayq-ingest"
	DefaultSlowRate    = 1000
	DefaultBatchSize   = 1000
	DefaultBatchWait   = 20 * time.Millisecond
	DefaultRetries     = 5
	DefaultBackoff     = 100 * time.Millisecond
	DefaultMaxBackoff  = 2 * time.Second
	DefaultCallTimeout = 10 * time.Second
	DefaultStopTimeout = 30 * time.Second
)

// ErrConfig is wrapped by every error Validate reports.
var ErrConfig = errors.New("ingest: invalid config")

// Config configures an Ingester. The zero value of every field but Brokers
// means its default.
type Config struct {
	// Brokers are the Kafka bootstrap addresses. Required.
	Brokers []string
	// GroupID is the consumer group of both input readers. Default "delayq-ingest".
	GroupID string

	// Input is the main input topic. Default delay-input.
	Input string
	// Slow is the rate-limited input topic. Default delay-input-slow.
	Slow string
	// Failed is where messages that cannot be accepted go. Default delay-failed.
	Failed string

	// SlowRate caps the slow topic, in messages per second (per process).
	// Default 1000.
	SlowRate float64
	// BatchSize is the most messages handled (and committed) together. Default 1000.
	BatchSize int
	// BatchWait is how long a batch stays open after its first message.
	// Default 20ms.
	BatchWait time.Duration

	// Decode validates input messages. Its AllowTopic, whatever it is, never
	// allows Input, Slow or Failed nor an internal topic as a destination.
	Decode payload.DecodeConfig

	// Retries is how many times Store.Put, Index.Add and the failed-topic
	// write are attempted before giving up. Default 5.
	Retries int
	// Backoff is the wait after the first failed attempt; it doubles after
	// each further one up to MaxBackoff. Defaults 100ms and 2s.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// CallTimeout bounds one attempt of one store call. Default 10s.
	CallTimeout time.Duration
	// StopTimeout bounds finishing and committing the batch in hand after
	// Run's ctx is cancelled. Default 30s.
	StopTimeout time.Duration

	// Logger receives the ingester's logs; nil discards them.
	Logger *slog.Logger
	// Registerer gets the ingester's metrics; nil registers nothing.
	Registerer prometheus.Registerer
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
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = max(DefaultMaxBackoff, c.Backoff)
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	allow := c.Decode.AllowTopic
	input, slow, failed := c.Input, c.Slow, c.Failed
	c.Decode.AllowTopic = func(topic string) bool {
		if topic == input || topic == slow || topic == failed || topics.Internal(topic) {
			return false
		}
		return allow == nil || allow(topic)
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
	if c.Retries < 0 {
		bad("retries: %d < 0", c.Retries)
	}
	if c.Backoff < 0 {
		bad("backoff: %v < 0", c.Backoff)
	}
	if c.MaxBackoff < c.Backoff {
		bad("max backoff: %v < backoff %v", c.MaxBackoff, c.Backoff)
	}
	if c.CallTimeout < 0 {
		bad("call timeout: %v < 0", c.CallTimeout)
	}
	if c.StopTimeout < 0 {
		bad("stop timeout: %v < 0", c.StopTimeout)
	}
	return errors.Join(errs...)
}

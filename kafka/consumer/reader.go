package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/internal/klog"
	"github.com/delayq/delayq/kafka/kafkaauth"
)

// ReaderConfig configures NewReader. The zero value means the defaults,
// except that GroupID and Topics are required.
type ReaderConfig struct {
	Brokers []string // default admin.DefaultBroker
	// Auth secures the connections (TLS, SASL); nil: plaintext.
	Auth    *kafkaauth.Auth
	GroupID string
	Topics  []string
	// MinBytes a fetch waits for; default 1, so a fetch answers as soon as
	// anything is there.
	MinBytes int
	// MaxBytes of one fetch; default DefaultMaxBytes (10 MiB).
	MaxBytes int
	// MaxWait is how long a fetch waits for MinBytes; default
	// DefaultMaxWait (500 ms; kafka-go: 10 s).
	MaxWait time.Duration
	// CommitInterval 0 (the default) makes CommitMessages commit
	// synchronously; > 0 makes it queue commits and flush them at this
	// interval and on Close. Use FetchMessage either way.
	CommitInterval time.Duration
	// StartOffset for a group without a committed offset; default
	// kafka.FirstOffset.
	StartOffset int64
	// Logger receives kafka-go's error log; nil discards it.
	Logger *slog.Logger
}

// ErrConfig is wrapped by NewReader for an unusable config.
var ErrConfig = errors.New("kafka: reader config")

// Config returns the kafka-go reader config: a consumer group over Topics.
func (c ReaderConfig) Config() (kafka.ReaderConfig, error) {
	var errs []error
	if c.GroupID == "" {
		errs = append(errs, fmt.Errorf("%w: no group id", ErrConfig))
	}
	if len(c.Topics) == 0 {
		errs = append(errs, fmt.Errorf("%w: no topics", ErrConfig))
	}
	if c.MinBytes < 0 || c.MaxBytes < 0 || (c.MaxBytes > 0 && c.MinBytes > c.MaxBytes) {
		errs = append(errs, fmt.Errorf("%w: min bytes %d, max bytes %d", ErrConfig, c.MinBytes, c.MaxBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return kafka.ReaderConfig{}, err
	}
	rc := kafka.ReaderConfig{
		Brokers:                c.Brokers,
		Dialer:                 c.Auth.Dialer(0),
		GroupID:                c.GroupID,
		MinBytes:               c.MinBytes,
		MaxBytes:               c.MaxBytes,
		MaxWait:                c.MaxWait,
		CommitInterval:         c.CommitInterval,
		StartOffset:            c.StartOffset,
		WatchPartitionChanges:  true,
		PartitionWatchInterval: PartitionWatchInterval,
		HeartbeatInterval:      HeartbeatInterval,
		SessionTimeout:         SessionTimeout,
		JoinGroupBackoff:       JoinBackoff,
		GroupBalancers:         balancers,
	}
	if len(rc.Brokers) == 0 {
		rc.Brokers = []string{admin.DefaultBroker}
	}
	if len(c.Topics) == 1 {
		rc.Topic = c.Topics[0]
	} else {
		rc.GroupTopics = c.Topics
	}
	if rc.MinBytes == 0 {
		rc.MinBytes = 1
	}
	if rc.MaxBytes == 0 {
		rc.MaxBytes = DefaultMaxBytes
	}
	if rc.MaxWait == 0 {
		rc.MaxWait = DefaultMaxWait
	}
	if rc.StartOffset == 0 {
		rc.StartOffset = kafka.FirstOffset
	}
	if c.Logger != nil {
		rc.ErrorLogger = klog.Logger(c.Logger.With("component", "kafka_reader"))
	}
	if err := rc.Validate(); err != nil {
		return kafka.ReaderConfig{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return rc, nil
}

// NewReader returns a consumer-group reader built from cfg. Close it when
// done: Close flushes queued commits and leaves the group.
func NewReader(cfg ReaderConfig) (*kafka.Reader, error) {
	rc, err := cfg.Config()
	if err != nil {
		return nil, err
	}
	return kafka.NewReader(rc), nil
}

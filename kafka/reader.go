package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	kgo "github.com/segmentio/kafka-go"
)

// ReaderConfig configures NewReader. The zero value means the defaults,
// except that GroupID and Topics are required.
type ReaderConfig struct {
	Brokers []string // default DefaultBroker
	GroupID string
	Topics  []string
	// MinBytes a fetch waits for; default 1, so a fetch answers as soon as
	// anything is there.
	MinBytes int
	// MaxBytes of one fetch; default 10 MiB.
	MaxBytes int
	// MaxWait is how long a fetch waits for MinBytes; default 500 ms
	// (kafka-go: 10 s).
	MaxWait time.Duration
	// CommitInterval 0 (the default) makes CommitMessages commit
	// synchronously; > 0 makes it queue commits and flush them at this
	// interval and on Close. Use FetchMessage either way.
	CommitInterval time.Duration
	// StartOffset for a group without a committed offset; default
	// kgo.FirstOffset.
	StartOffset int64
	// Logger receives kafka-go's error log; nil discards it.
	Logger *slog.Logger
}

// Consumer-group timing shared by every group delayq runs. kafka-go's
// defaults (3 s heartbeats, 30 s session, 5 s join backoff) leave a crashed
// member's partitions idle for half a minute and make every rebalance slow;
// these bound a kill -9 outage to about GroupSessionTimeout.
const (
	GroupHeartbeatInterval = time.Second
	GroupSessionTimeout    = 10 * time.Second
	GroupJoinBackoff       = 500 * time.Millisecond
)

// ErrReaderConfig is wrapped by NewReader for an unusable config.
var ErrReaderConfig = errors.New("kafka: reader config")

// Config returns the kafka-go reader config: a consumer group over Topics.
func (c ReaderConfig) Config() (kgo.ReaderConfig, error) {
	var errs []error
	if c.GroupID == "" {
		errs = append(errs, fmt.Errorf("%w: no group id", ErrReaderConfig))
	}
	if len(c.Topics) == 0 {
		errs = append(errs, fmt.Errorf("%w: no topics", ErrReaderConfig))
	}
	if c.MinBytes < 0 || c.MaxBytes < 0 || (c.MaxBytes > 0 && c.MinBytes > c.MaxBytes) {
		errs = append(errs, fmt.Errorf("%w: min bytes %d, max bytes %d", ErrReaderConfig, c.MinBytes, c.MaxBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return kgo.ReaderConfig{}, err
	}
	rc := kgo.ReaderConfig{
		Brokers:               c.Brokers,
		GroupID:               c.GroupID,
		MinBytes:              c.MinBytes,
		MaxBytes:              c.MaxBytes,
		MaxWait:               c.MaxWait,
		CommitInterval:        c.CommitInterval,
		StartOffset:           c.StartOffset,
		WatchPartitionChanges: true,
		HeartbeatInterval:     GroupHeartbeatInterval,
		SessionTimeout:        GroupSessionTimeout,
		JoinGroupBackoff:      GroupJoinBackoff,
	}
	if len(rc.Brokers) == 0 {
		rc.Brokers = []string{DefaultBroker}
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
		rc.MaxBytes = 10 << 20
	}
	if rc.MaxWait == 0 {
		rc.MaxWait = 500 * time.Millisecond
	}
	if rc.StartOffset == 0 {
		rc.StartOffset = kgo.FirstOffset
	}
	if c.Logger != nil {
		rc.ErrorLogger = errorLogger(c.Logger.With("component", "kafka_reader"))
	}
	if err := rc.Validate(); err != nil {
		return kgo.ReaderConfig{}, fmt.Errorf("%w: %w", ErrReaderConfig, err)
	}
	return rc, nil
}

// NewReader returns a consumer-group reader built from cfg. Close it when
// done: Close flushes queued commits and leaves the group.
func NewReader(cfg ReaderConfig) (*kgo.Reader, error) {
	rc, err := cfg.Config()
	if err != nil {
		return nil, err
	}
	return kgo.NewReader(rc), nil
}

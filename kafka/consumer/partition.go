package consumer

import (
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/committed"
	"github.com/delayq/delayq/kafka/kafkaauth"
)

// Defaults of Partition.
const (
	DefaultMaxBytes = 10 << 20
	DefaultMaxWait  = 500 * time.Millisecond
)

// Partition configures a reader of one partition from a given offset: the
// preset every partition reader of delayq is built from (ingest's lanes,
// the scanner's partitions, the failed-topic replay). A fetch answers as
// soon as one byte is there (MinBytes 1). The zero value means the
// defaults, except that Topic is required.
type Partition struct {
	Brokers []string        // default admin.DefaultBroker
	Auth    *kafkaauth.Auth // TLS and SASL; nil: plaintext
	Topic   string
	// Partition is the partition read.
	Partition int
	// Offset is the first offset to read, or kafka.FirstOffset (the log
	// start) or kafka.LastOffset (the log end).
	Offset int64
	// MaxBytes of one fetch; default DefaultMaxBytes (10 MiB). A record
	// batch larger than that still comes whole.
	MaxBytes int
	// MaxWait is how long a fetch waits for a record on the broker;
	// default DefaultMaxWait (500 ms; kafka-go: 10 s).
	MaxWait time.Duration
}

// withDefaults returns p with its zero fields set to the defaults, or an
// error for an unusable p.
func (p Partition) withDefaults() (Partition, error) {
	var errs []error
	if p.Topic == "" {
		errs = append(errs, fmt.Errorf("%w: no topic", ErrConfig))
	}
	if p.Partition < 0 {
		errs = append(errs, fmt.Errorf("%w: partition %d", ErrConfig, p.Partition))
	}
	if p.MaxBytes < 0 || p.MaxWait < 0 {
		errs = append(errs, fmt.Errorf("%w: max bytes %d, max wait %v", ErrConfig, p.MaxBytes, p.MaxWait))
	}
	if err := errors.Join(errs...); err != nil {
		return p, err
	}
	if len(p.Brokers) == 0 {
		p.Brokers = []string{admin.DefaultBroker}
	}
	if p.MaxBytes == 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	if p.MaxWait == 0 {
		p.MaxWait = DefaultMaxWait
	}
	return p, nil
}

// Config returns the kafka-go config of a reader of the partition (no
// consumer group); NewPartitionReader positions it at p.Offset.
func (p Partition) Config() (kafka.ReaderConfig, error) {
	p, err := p.withDefaults()
	if err != nil {
		return kafka.ReaderConfig{}, err
	}
	rc := kafka.ReaderConfig{
		Brokers:   p.Brokers,
		Dialer:    p.Auth.Dialer(0),
		Topic:     p.Topic,
		Partition: p.Partition,
		MinBytes:  1,
		MaxBytes:  p.MaxBytes,
		MaxWait:   p.MaxWait,
	}
	if err := rc.Validate(); err != nil {
		return kafka.ReaderConfig{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return rc, nil
}

// NewPartitionReader returns a kafka-go Reader of the partition positioned
// at p.Offset. It reads every record, those of aborted transactions
// included: a reader of what delayq itself writes (scan tasks, the failed
// topic) needs no more. It does not connect: the first fetch does. Close
// it when done.
func NewPartitionReader(p Partition) (*kafka.Reader, error) {
	rc, err := p.Config()
	if err != nil {
		return nil, err
	}
	r := kafka.NewReader(rc)
	if err := r.SetOffset(p.Offset); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s/%d: seek to %d: %w", p.Topic, p.Partition, p.Offset, err)
	}
	return r, nil
}

// NewCommittedReader returns a read-committed reader of the partition
// (package kafka/committed) positioned at p.Offset: records of aborted
// transactions and transaction markers never reach it. A reader of what
// producers write (the input topics) needs it. Close it when done.
func NewCommittedReader(p Partition) (*committed.Reader, error) {
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	return committed.NewReader(committed.Config{
		Brokers: p.Brokers, Auth: p.Auth, Topic: p.Topic, Partition: p.Partition, Offset: p.Offset,
		MaxBytes: p.MaxBytes, MaxWait: p.MaxWait,
	})
}

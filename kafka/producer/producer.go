package producer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/internal/klog"
	"github.com/delayq/delayq/kafka/kafkaauth"
)

// Config configures New. The zero value means the defaults.
type Config struct {
	Brokers []string // default admin.DefaultBroker
	// Auth secures the connections (TLS, SASL); nil: plaintext.
	Auth *kafkaauth.Auth
	// BatchSize is the number of messages per partition batch; default 1000.
	BatchSize int
	// BatchBytes caps the bytes of one batch request; default 1 MiB (the
	// kafka-go default). A single larger message fails.
	BatchBytes int64
	// BatchTimeout is how long a partial batch waits; default 5 ms.
	BatchTimeout time.Duration
	// Async makes WriteMessages return without waiting for the brokers;
	// errors are then only logged. Leave it off wherever delivery matters.
	Async bool
	// AutoCreateTopics lets the writer ask the brokers to create a topic
	// it writes to that does not exist (when the brokers allow it). Off by
	// default: producers must not create topics with delayq's Kafka
	// identity by naming them; delayd turns it on in embedded mode only.
	AutoCreateTopics bool
	// Logger receives kafka-go's error log; nil discards it.
	Logger *slog.Logger
	// ClientID names the writer to the brokers (their request logs, client
	// quotas); empty: kafka-go's default, the program and host names.
	ClientID string
}

// New returns a writer that acknowledges with all in-sync replicas,
// routes messages by a hash of their key and takes the topic from each
// message. A topic that does not exist is an error (UnknownTopicOrPartition,
// answered from the writer's metadata cache) unless AutoCreateTopics is set.
// Close it when done.
func New(cfg Config) *kafka.Writer {
	cfg.setDefaults()
	return newWriter(cfg, cfg.transport())
}

func (cfg *Config) setDefaults() {
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = []string{admin.DefaultBroker}
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.BatchTimeout <= 0 {
		cfg.BatchTimeout = 5 * time.Millisecond
	}
}

// transport returns the transport of cfg's writers: the shared one of
// cfg.Auth, or one of their own when they name themselves, under a
// partition cache.
func (cfg Config) transport() kafka.RoundTripper {
	tr := cfg.Auth.Transport()
	if cfg.ClientID != "" {
		own := cfg.Auth.NewTransport()
		own.ClientID = cfg.ClientID
		tr = own
	}
	return newPartitionCache(tr, kafkaauth.MetadataTTL)
}

func newWriter(cfg Config, tr kafka.RoundTripper) *kafka.Writer {
	w := &kafka.Writer{
		Addr:                   kafka.TCP(cfg.Brokers...),
		Transport:              tr,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchSize:              cfg.BatchSize,
		BatchBytes:             cfg.BatchBytes,
		BatchTimeout:           cfg.BatchTimeout,
		Async:                  cfg.Async,
		AllowAutoTopicCreation: cfg.AutoCreateTopics,
	}
	if cfg.Logger != nil {
		w.ErrorLogger = klog.Logger(cfg.Logger.With("component", "kafka_writer"))
	}
	return w
}

// DefaultSmall is NewSplit's default limit of a small write.
const DefaultSmall = 64

// Split is two writers on one transport: a call of up to Small messages
// goes through a writer whose partition batches hold Small messages, a
// larger call through one whose batches hold Config.BatchSize. kafka-go
// allocates room for a whole batch (BatchSize messages of ~150 bytes)
// with every partition batch it opens; one writer with the large batch
// size a drain needs makes a steady trickle of small writes allocate
// ~150 KB per partition batch. A call goes to one writer as a whole, so
// its errors (kafka.WriteErrors) index its messages as they would with
// one writer.
type Split struct {
	small, large *kafka.Writer
	limit        int
}

// NewSplit returns the Split of cfg; small is the largest small call
// (DefaultSmall when 0 or less; at most cfg.BatchSize).
func NewSplit(cfg Config, small int) *Split {
	cfg.setDefaults()
	if small <= 0 {
		small = DefaultSmall
	}
	small = min(small, cfg.BatchSize)
	tr := cfg.transport()
	sc := cfg
	sc.BatchSize = small
	return &Split{small: newWriter(sc, tr), large: newWriter(cfg, tr), limit: small}
}

// WriteMessages writes msgs through the writer of their count.
func (s *Split) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if len(msgs) <= s.limit {
		return s.small.WriteMessages(ctx, msgs...)
	}
	return s.large.WriteMessages(ctx, msgs...)
}

// Close closes both writers.
func (s *Split) Close() error { return errors.Join(s.small.Close(), s.large.Close()) }

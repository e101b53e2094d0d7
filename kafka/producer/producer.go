package producer

import (
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
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = []string{admin.DefaultBroker}
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.BatchTimeout <= 0 {
		cfg.BatchTimeout = 5 * time.Millisecond
	}
	w := &kafka.Writer{
		Addr:                   kafka.TCP(cfg.Brokers...),
		Transport:              cfg.Auth.Transport(),
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchSize:              cfg.BatchSize,
		BatchBytes:             cfg.BatchBytes,
		BatchTimeout:           cfg.BatchTimeout,
		Async:                  cfg.Async,
		AllowAutoTopicCreation: cfg.AutoCreateTopics,
	}
	if cfg.ClientID != "" {
		tr := cfg.Auth.NewTransport()
		tr.ClientID = cfg.ClientID
		w.Transport = tr
	}
	if cfg.Logger != nil {
		w.ErrorLogger = klog.Logger(cfg.Logger.With("component", "kafka_writer"))
	}
	return w
}

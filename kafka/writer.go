package kafka

import (
	"fmt"
	"log/slog"
	"time"

	kgo "github.com/segmentio/kafka-go"
)

// DefaultBroker is used when a config names no brokers.
const DefaultBroker = "127.0.0.1:9092"

// WriterConfig configures NewWriter. The zero value means the defaults.
type WriterConfig struct {
	Brokers []string // default DefaultBroker
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
	// Logger receives kafka-go's error log; nil discards it.
	Logger *slog.Logger
}

// NewWriter returns a writer that acknowledges with all in-sync replicas,
// routes messages by a hash of their key, takes the topic from each message
// and lets the broker auto-create a topic when it allows that. Close it when
// done.
func NewWriter(cfg WriterConfig) *kgo.Writer {
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = []string{DefaultBroker}
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.BatchTimeout <= 0 {
		cfg.BatchTimeout = 5 * time.Millisecond
	}
	w := &kgo.Writer{
		Addr:                   kgo.TCP(cfg.Brokers...),
		Balancer:               &kgo.Hash{},
		RequiredAcks:           kgo.RequireAll,
		BatchSize:              cfg.BatchSize,
		BatchBytes:             cfg.BatchBytes,
		BatchTimeout:           cfg.BatchTimeout,
		Async:                  cfg.Async,
		AllowAutoTopicCreation: true,
	}
	if cfg.Logger != nil {
		w.ErrorLogger = errorLogger(cfg.Logger.With("component", "kafka_writer"))
	}
	return w
}

// errorLogger adapts slog to kafka-go's printf-style logger.
func errorLogger(l *slog.Logger) kgo.LoggerFunc {
	return func(format string, args ...any) {
		l.Error("kafka_client_error", "detail", fmt.Sprintf(format, args...))
	}
}

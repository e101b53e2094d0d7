package producer

import (
	"log/slog"
	"net"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/internal/klog"
	"github.com/delayq/delayq/kafka/topics"
)

// Config configures New. The zero value means the defaults.
type Config struct {
	Brokers []string // default topics.DefaultBroker
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

// MetadataTTL is how old the writers' cached partition leaders get before
// they ask the brokers again.
const MetadataTTL = time.Second

// transport is kafka.DefaultTransport with MetadataTTL, shared by every
// writer of the process as the default one would be. kafka-go refreshes
// its cached leaders only when they are that old, not when a broker
// answers NOT_LEADER_OR_FOLLOWER: with its 6 s default, writes to a
// partition whose leader moved (a broker stopping, failing, coming back)
// failed for up to 6 s.
var transport = &kafka.Transport{
	Dial:        (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
	MetadataTTL: MetadataTTL,
}

// New returns a writer that acknowledges with all in-sync replicas,
// routes messages by a hash of their key, takes the topic from each message
// and lets the broker auto-create a topic when it allows that. Close it when
// done.
func New(cfg Config) *kafka.Writer {
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = []string{topics.DefaultBroker}
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.BatchTimeout <= 0 {
		cfg.BatchTimeout = 5 * time.Millisecond
	}
	w := &kafka.Writer{
		Addr:                   kafka.TCP(cfg.Brokers...),
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchSize:              cfg.BatchSize,
		BatchBytes:             cfg.BatchBytes,
		BatchTimeout:           cfg.BatchTimeout,
		Async:                  cfg.Async,
		AllowAutoTopicCreation: true,
		Transport:              transport,
	}
	if cfg.Logger != nil {
		w.ErrorLogger = klog.Logger(cfg.Logger.With("component", "kafka_writer"))
	}
	return w
}

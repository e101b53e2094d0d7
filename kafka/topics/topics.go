package topics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/kafkaauth"
)

// DefaultBroker is the bootstrap address used when a config names no
// brokers.
const DefaultBroker = "127.0.0.1:9092"

// DefaultPartitions is the partition count of the topics delayd creates.
const DefaultPartitions = 8

// delayq's own topics.
const (
	Input  = "delay-input"      // tasks and cancels from producers
	Slow   = "delay-input-slow" // the same, read at a limited rate
	Scan   = "delay-scan"       // scan tasks from the dispatcher
	Failed = "delay-failed"     // input that broke the contract
)

// Internal reports whether topic is a Kafka internal topic (`__*`) or one
// of delayq's own; tasks are never delivered to such a topic.
func Internal(topic string) bool {
	switch topic {
	case Input, Slow, Scan, Failed:
		return true
	}
	return strings.HasPrefix(topic, "__")
}

// Legal applies Kafka's topic name rule: 1 to 249 characters of
// [a-zA-Z0-9._-], and neither "." nor "..".
func Legal(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Spec describes a topic to create. Zero Partitions or
// ReplicationFactor means the broker's default (num.partitions,
// default.replication.factor).
type Spec struct {
	Name              string
	Partitions        int
	ReplicationFactor int
}

// Defaults returns delayq's four topics with the given partition count
// each (0 = broker default) and the broker's default replication factor.
func Defaults(partitions int) []Spec {
	return []Spec{
		{Name: Input, Partitions: partitions},
		{Name: Slow, Partitions: partitions},
		{Name: Scan, Partitions: partitions},
		{Name: Failed, Partitions: partitions},
	}
}

// ErrCreate is wrapped by Ensure when the cluster refused to
// create a topic.
var ErrCreate = errors.New("kafka: create topics")

// Ensure creates the topics in specs that do not exist yet. It is
// idempotent: a topic that already exists counts as created, whatever its
// partition count. The request goes to the controller; Ensure returns
// once the created topics show up in the cluster metadata. auth secures
// the connections (nil: plaintext); a TLS or SASL failure comes back
// explained (kafkaauth.Error).
func Ensure(ctx context.Context, brokers []string, auth *kafkaauth.Auth, specs []Spec) error {
	if len(specs) == 0 {
		return nil
	}
	if len(brokers) == 0 {
		return fmt.Errorf("%w: no brokers", ErrCreate)
	}
	transport := auth.NewTransport()
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: transport, Timeout: 30 * time.Second}

	req := &kafka.CreateTopicsRequest{Topics: make([]kafka.TopicConfig, len(specs))}
	for i, s := range specs {
		req.Topics[i] = kafka.TopicConfig{
			Topic:             s.Name,
			NumPartitions:     defaultToBroker(s.Partitions),
			ReplicationFactor: defaultToBroker(s.ReplicationFactor),
		}
	}
	res, err := client.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCreate, auth.Diagnose(ctx, client, err))
	}
	var errs []error
	for _, s := range specs {
		err, ok := res.Errors[s.Name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%w: %s: no answer for the topic", ErrCreate, s.Name))
		case err != nil && !errors.Is(err, kafka.TopicAlreadyExists):
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrCreate, s.Name, err))
		}
	}
	return errors.Join(errs...)
}

// defaultToBroker maps 0 to -1, which asks the broker for its default.
func defaultToBroker(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

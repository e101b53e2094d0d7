package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	kgo "github.com/segmentio/kafka-go"
)

// delayq's own topics.
const (
	TopicInput     = "delay-input"      // tasks and cancels from producers
	TopicInputSlow = "delay-input-slow" // the same, read at a limited rate
	TopicScan      = "delay-scan"       // scan tasks from the dispatcher
	TopicFailed    = "delay-failed"     // input that broke the contract
)

// Internal reports whether topic is a Kafka internal topic (`__*`) or one
// of delayq's own; tasks are never delivered to such a topic.
func Internal(topic string) bool {
	switch topic {
	case TopicInput, TopicInputSlow, TopicScan, TopicFailed:
		return true
	}
	return strings.HasPrefix(topic, "__")
}

// LegalTopic applies Kafka's topic name rule: 1 to 249 characters of
// [a-zA-Z0-9._-], and neither "." nor "..".
func LegalTopic(s string) bool {
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

// TopicSpec describes a topic to create. Zero Partitions or
// ReplicationFactor means the broker's default (num.partitions,
// default.replication.factor).
type TopicSpec struct {
	Name              string
	Partitions        int
	ReplicationFactor int
}

// DefaultTopics returns delayq's four topics with the given partition count
// each (0 = broker default) and the broker's default replication factor.
func DefaultTopics(partitions int) []TopicSpec {
	return []TopicSpec{
		{Name: TopicInput, Partitions: partitions},
		{Name: TopicInputSlow, Partitions: partitions},
		{Name: TopicScan, Partitions: partitions},
		{Name: TopicFailed, Partitions: partitions},
	}
}

// ErrCreateTopics is wrapped by EnsureTopics when the cluster refused to
// create a topic.
var ErrCreateTopics = errors.New("kafka: create topics")

// EnsureTopics creates the topics in specs that do not exist yet. It is
// idempotent: a topic that already exists counts as created, whatever its
// partition count. The request goes to the controller; EnsureTopics returns
// once the created topics show up in the cluster metadata.
func EnsureTopics(ctx context.Context, brokers []string, specs []TopicSpec) error {
	if len(specs) == 0 {
		return nil
	}
	if len(brokers) == 0 {
		return fmt.Errorf("%w: no brokers", ErrCreateTopics)
	}
	transport := &kgo.Transport{}
	defer transport.CloseIdleConnections()
	client := &kgo.Client{Addr: kgo.TCP(brokers...), Transport: transport, Timeout: 30 * time.Second}

	req := &kgo.CreateTopicsRequest{Topics: make([]kgo.TopicConfig, len(specs))}
	for i, s := range specs {
		req.Topics[i] = kgo.TopicConfig{
			Topic:             s.Name,
			NumPartitions:     defaultToBroker(s.Partitions),
			ReplicationFactor: defaultToBroker(s.ReplicationFactor),
		}
	}
	res, err := client.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCreateTopics, err)
	}
	var errs []error
	for _, s := range specs {
		err, ok := res.Errors[s.Name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%w: %s: no answer for the topic", ErrCreateTopics, s.Name))
		case err != nil && !errors.Is(err, kgo.TopicAlreadyExists):
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrCreateTopics, s.Name, err))
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

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

// Internal reports whether topic is a Kafka internal topic (`__*`), one of
// delayq's own, or a well-known internal topic of the systems that run
// beside Kafka (Schema Registry's `_schemas`, Confluent's `_confluent-*`,
// Kafka Connect's `connect-configs`, `connect-offsets`, `connect-status`);
// tasks are never delivered to such a topic, whatever --allow-topics says.
func Internal(topic string) bool {
	switch topic {
	case Input, Slow, Scan, Failed, "_schemas", "connect-configs", "connect-offsets", "connect-status":
		return true
	}
	return strings.HasPrefix(topic, "__") || strings.HasPrefix(topic, "_confluent-")
}

// Restricted reports whether topic has a name other systems use for their
// own topics (`_*`, `connect-*`). The default allow-list (Allow with no
// patterns) refuses such a topic; a pattern that names it allows it.
func Restricted(topic string) bool {
	return strings.HasPrefix(topic, "_") || strings.HasPrefix(topic, "connect-")
}

// Allow returns the allow-list of --allow-topics: whether tasks may name a
// business topic. A pattern is an exact name (`orders`) or a prefix ending
// in `*` (`orders.*`; `*` alone matches every name). Without patterns
// every topic is allowed but the Restricted ones. Internal topics are
// never allowed. Check the patterns with CheckPatterns first.
func Allow(patterns []string) func(string) bool {
	exact := make(map[string]bool, len(patterns))
	var prefixes []string
	for _, p := range patterns {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			prefixes = append(prefixes, pre)
		} else {
			exact[p] = true
		}
	}
	return func(topic string) bool {
		switch {
		case Internal(topic):
			return false
		case len(patterns) == 0:
			return !Restricted(topic)
		case exact[topic]:
			return true
		}
		for _, pre := range prefixes {
			if strings.HasPrefix(topic, pre) {
				return true
			}
		}
		return false
	}
}

// CheckPatterns reports every pattern of an allow-list (see Allow) that
// is not a legal topic name, optionally followed by one `*`.
func CheckPatterns(patterns []string) error {
	var errs []error
	for _, p := range patterns {
		pre, _ := strings.CutSuffix(p, "*")
		if p != "*" && !Legal(pre) {
			errs = append(errs, fmt.Errorf("topics: allow pattern %q is not a topic name or a prefix ending in *", p))
		}
	}
	return errors.Join(errs...)
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
// once the created topics show up in the cluster metadata.
//
// It goes through auth's shared transport (kafka-go's default one when
// auth is nil), the one every writer of producer.New without a ClientID
// shares: the transport refreshes its metadata cache after
// creating topics, so those writers know the new topics at once. They do
// not auto-create topics, and would otherwise answer "unknown topic" from
// their cache until its next refresh (up to 6 s).
//
// auth secures the connections (nil: plaintext); a TLS or SASL failure
// comes back explained (kafkaauth.Error).
func Ensure(ctx context.Context, brokers []string, auth *kafkaauth.Auth, specs []Spec) error {
	if len(specs) == 0 {
		return nil
	}
	if len(brokers) == 0 {
		return fmt.Errorf("%w: no brokers", ErrCreate)
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: auth.Transport(), Timeout: 30 * time.Second}

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

// Missing asks the brokers whether topic exists, never creating it, and
// reports true when they answer that it does not. It reads fresh metadata
// over connections of its own: a kafka-go writer that does not auto-create
// topics answers "unknown topic" from its metadata cache, which keeps the
// last topics it saw while the brokers are unreachable, so its answer
// alone cannot tell a missing topic from an outage. An unreachable
// cluster is an error, never a missing topic.
func Missing(ctx context.Context, brokers []string, auth *kafkaauth.Auth, topic string) (bool, error) {
	transport := auth.NewTransport()
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: transport, Timeout: 10 * time.Second}
	res, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return false, fmt.Errorf("kafka: metadata of %s: %w", topic, err)
	}
	for _, t := range res.Topics {
		if t.Name != topic {
			continue
		}
		if errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
			return true, nil
		}
		return false, t.Error
	}
	return true, nil
}

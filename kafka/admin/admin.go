package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/topics"
)

// DefaultBroker is the bootstrap address used when a config names no
// brokers.
const DefaultBroker = "127.0.0.1:9092"

// DefaultPartitions is the partition count of the topics delayd creates.
const DefaultPartitions = 8

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
		{Name: topics.Input, Partitions: partitions},
		{Name: topics.Slow, Partitions: partitions},
		{Name: topics.Scan, Partitions: partitions},
		{Name: topics.Failed, Partitions: partitions},
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

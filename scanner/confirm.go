package scanner

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/kafkaauth"
)

// confirmed is the single writer with its "unknown topic" answers checked
// against the brokers (admin.Missing). delayq's writers do not auto-create
// topics, so kafka-go answers "unknown topic" from its metadata cache, which
// keeps the last topics it saw while the brokers are unreachable: a topic
// created since would look missing during an outage and count towards
// MaxAttempts. An answer the brokers do not confirm becomes the error of
// the check (an outage) or errTopicAppeared.
type confirmed struct {
	Writer
	brokers []string
	auth    *kafkaauth.Auth
}

// errTopicAppeared replaces an "unknown topic" answer for a topic the
// brokers know: written again later, not counted towards MaxAttempts.
var errTopicAppeared = errors.New("scanner: topic unknown to the writer's metadata cache exists")

func (c confirmed) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	err := c.Writer.WriteMessages(ctx, msgs...)
	if err == nil {
		return nil
	}
	var werrs kafka.WriteErrors
	if !errors.As(err, &werrs) || len(werrs) != len(msgs) {
		if !errors.Is(err, kafka.UnknownTopicOrPartition) || len(msgs) == 0 {
			return err
		}
		werrs = make(kafka.WriteErrors, len(msgs))
		for i := range werrs {
			werrs[i] = err
		}
	}
	verdict := make(map[string]error)
	for i, werr := range werrs {
		if !errors.Is(werr, kafka.UnknownTopicOrPartition) {
			continue
		}
		topic := msgs[i].Topic
		v, ok := verdict[topic]
		if !ok {
			missing, cerr := admin.Missing(ctx, c.brokers, c.auth, topic)
			switch {
			case cerr != nil:
				v = fmt.Errorf("scanner: confirm unknown topic %s: %w", topic, cerr)
			case !missing:
				v = errTopicAppeared
			}
			verdict[topic] = v
		}
		if v != nil {
			werrs[i] = v
		}
	}
	return werrs
}

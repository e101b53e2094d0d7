package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
)

// Headers the ingester adds to a message it writes to the failed topic,
// beside payload.HeaderError (the reason).
const (
	HeaderSourceTopic     = "delay-source-topic"
	HeaderSourcePartition = "delay-source-partition"
	HeaderSourceOffset    = "delay-source-offset"
)

// writeFailed writes msgs to the failed topic, retrying only the messages
// that failed, for as long as it takes: every error of the failed topic is
// an outage (or an operator's to fix), never a reason to drop a message. A
// message too large for the writer or the broker is written again without
// its value (and then without its key and original headers), so an
// oversized input can never stall its partition.
func (in *Ingester) writeFailed(ctx context.Context, msgs []payload.Message) error {
	pending := record.FromMessages(msgs)
	p := retry.Policy{Backoff: in.backoff, CallTimeout: in.cfg.CallTimeout, Permanent: fenced}
	return in.stage.Do(ctx, opFailed, p, func(ctx context.Context) error {
		// Each message shrinks at most twice; then give up on this attempt.
		for range 2*len(msgs) + 1 {
			err := in.w.WriteMessages(ctx, pending...)
			if err == nil {
				return nil
			}
			var tooLarge kafka.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				// The writer refused one message before sending anything.
				pending = append(tooLarge.Remaining, record.FromMessage(shrink(record.ToMessage(tooLarge.Message))))
				continue
			}
			var werrs kafka.WriteErrors
			if !errors.As(err, &werrs) || len(werrs) != len(pending) {
				return err
			}
			var next []kafka.Message
			for i, werr := range werrs {
				switch {
				case werr == nil:
				case errors.Is(werr, kafka.MessageSizeTooLarge):
					next = append(next, record.FromMessage(shrink(record.ToMessage(pending[i]))))
				default:
					next = append(next, pending[i])
				}
			}
			pending = next
			if len(pending) == 0 {
				return nil
			}
			return err
		}
		return errors.New("messages still too large after dropping their contents")
	})
}

// failedMessage is m as written to the failed topic: original key, value and
// headers (minus stale failure headers and provenance a producer set,
// payload.Provenance), the reason and the source position, last: replay
// trusts delay-source-* only there (package failed).
func (in *Ingester) failedMessage(m payload.Message, reason string) payload.Message {
	headers := make([]payload.Header, 0, len(m.Headers)+4)
	for _, h := range m.Headers {
		if !failureHeader(h.Key) && !payload.Provenance(h.Key) {
			headers = append(headers, h)
		}
	}
	headers = append(headers,
		payload.Header{Key: payload.HeaderError, Value: []byte(reason)},
		payload.Header{Key: HeaderSourceTopic, Value: []byte(m.Topic)},
		payload.Header{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(m.Partition))},
		payload.Header{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
	)
	// Keep the input's timestamp; kafka-go would send 0 for a zero Time,
	// which time-based retention deletes at once.
	at := m.Time
	if at.IsZero() {
		at = time.Now()
	}
	return payload.Message{Topic: in.cfg.Failed, Key: m.Key, Value: m.Value, Headers: headers, Time: at}
}

func failureHeader(key string) bool {
	switch key {
	case payload.HeaderError, HeaderSourceTopic, HeaderSourcePartition, HeaderSourceOffset:
		return true
	}
	return false
}

// shrink drops a failed message's value, or when it has none any more its key
// and pass-through headers, noting what was dropped in delay-error.
func shrink(m payload.Message) payload.Message {
	var kept []payload.Header
	var reason string
	for _, h := range m.Headers {
		if failureHeader(h.Key) {
			if h.Key == payload.HeaderError {
				reason = string(h.Value)
			}
			continue
		}
		kept = append(kept, h)
	}
	var pos []payload.Header
	for _, h := range m.Headers {
		if failureHeader(h.Key) && h.Key != payload.HeaderError {
			pos = append(pos, h)
		}
	}
	if len(m.Value) > 0 {
		reason += fmt.Sprintf(" (value of %d bytes dropped: too large for the failed topic)", len(m.Value))
		m.Value = nil
	} else {
		reason += fmt.Sprintf(" (key of %d bytes and %d headers dropped: too large for the failed topic)", len(m.Key), len(kept))
		m.Key, kept = nil, nil
	}
	m.Headers = append(append(kept, payload.Header{Key: payload.HeaderError, Value: []byte(reason)}), pos...)
	return m
}

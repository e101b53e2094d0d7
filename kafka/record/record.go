package record

import (
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
)

// ToMessage is m as delayq's message: topic, partition, offset, key,
// value, headers and record timestamp. kafka-go's HighWaterMark and
// WriterData are left behind.
func ToMessage(m kafka.Message) payload.Message {
	return payload.Message{
		Topic:     m.Topic,
		Partition: m.Partition,
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Headers:   ToHeaders(m.Headers),
		Time:      m.Time,
	}
}

// FromMessage is m as kafka-go's message, for a writer (which ignores
// Partition and Offset).
func FromMessage(m payload.Message) kafka.Message {
	return kafka.Message{
		Topic:     m.Topic,
		Partition: m.Partition,
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Headers:   FromHeaders(m.Headers),
		Time:      m.Time,
	}
}

// FromMessages converts ms with FromMessage, into a fresh slice.
func FromMessages(ms []payload.Message) []kafka.Message {
	if ms == nil {
		return nil
	}
	out := make([]kafka.Message, len(ms))
	for i, m := range ms {
		out[i] = FromMessage(m)
	}
	return out
}

// ToHeaders is hs as delayq's headers, in a fresh slice (nil for nil).
func ToHeaders(hs []kafka.Header) []payload.Header {
	if hs == nil {
		return nil
	}
	out := make([]payload.Header, len(hs))
	for i, h := range hs {
		out[i] = payload.Header(h)
	}
	return out
}

// FromHeaders is hs as kafka-go's headers, in a fresh slice (nil for nil).
func FromHeaders(hs []payload.Header) []kafka.Header {
	if hs == nil {
		return nil
	}
	out := make([]kafka.Header, len(hs))
	for i, h := range hs {
		out[i] = kafka.Header(h)
	}
	return out
}

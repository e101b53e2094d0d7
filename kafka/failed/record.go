package failed

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
)

// Headers of a failed message beside payload.HeaderError (the reason):
// where ingest read the message it could not accept. The scanner's
// refusals carry none of them.
const (
	HeaderSourceTopic     = "delay-source-topic"
	HeaderSourcePartition = "delay-source-partition"
	HeaderSourceOffset    = "delay-source-offset"
)

// Headers a replayed message carries, so that it stays traceable through
// the pipeline and in the business topic, which receives them with the
// other pass-through headers.
const (
	// HeaderReplayOf names the failed message replayed:
	// "<failed topic>/<partition>/<offset>". A message replayed again after
	// failing again names the newest failed message.
	HeaderReplayOf = "delay-replay-of"
	// HeaderReplaySource names the input position the message was first
	// read from: "<input topic>/<partition>/<offset>", from the failed
	// message's delay-source-* headers. Later replays keep the first value.
	// The scanner's refusals have no input position and get none.
	HeaderReplaySource = "delay-replay-source"
)

// ErrDropped is returned by Record.Replay for a failed message whose
// contents were dropped to fit the failed topic: replaying it would
// deliver something else than what the producer wrote.
var ErrDropped = errors.New("failed: message contents were dropped to fit the failed topic")

// droppedMarks are the texts ingest and the scanner add to delay-error
// when they had to drop a failed message's contents (ingest's shrink,
// the scanner's strip).
var droppedMarks = []string{
	"dropped: too large for the failed topic", // ingest: value, or key and headers
	"key, value and headers dropped",          // scanner
}

// Record is one message of the failed topic, with the delay headers that
// describe it read out.
type Record struct {
	Topic     string    // the failed topic it was read from
	Partition int       // of the failed topic
	Offset    int64     // of the failed topic
	Time      time.Time // record timestamp: the input's time (ingest) or the refusal (scanner)
	Reason    string    // delay-error
	Business  string    // delay-topic: the business topic, "" when missing
	ID        string    // delay-id as carried, "" when missing
	// Source is where ingest read the message, "<topic>/<partition>/<offset>",
	// from the delay-source-* headers; "" for a refusal by the scanner (the
	// task was stored; its ID and delay-at name it).
	Source string
	// Dropped is set when the contents were dropped to fit the failed
	// topic; such a record is listed but never replayed.
	Dropped bool
	Message kafka.Message // as read
}

// Position returns "<topic>/<partition>/<offset>" of the failed message.
func (r Record) Position() string {
	return payload.DerivedName(r.Topic, r.Partition, r.Offset)
}

// Parse reads the delay headers of m, a message of the failed topic. When
// a header is given more than once, the first counts.
func Parse(m kafka.Message) Record {
	r := Record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Time: m.Time, Message: m}
	r.Reason = header(m, payload.HeaderError)
	r.Business = header(m, payload.HeaderTopic)
	r.ID = header(m, payload.HeaderID)
	r.Source = source(m)
	for _, mark := range droppedMarks {
		if strings.Contains(r.Reason, mark) {
			r.Dropped = true
		}
	}
	return r
}

// source returns the input position of the delay-source-* headers, or ""
// when they are missing or malformed.
func source(m kafka.Message) string {
	topic := header(m, HeaderSourceTopic)
	p, perr := strconv.Atoi(header(m, HeaderSourcePartition))
	o, oerr := strconv.ParseInt(header(m, HeaderSourceOffset), 10, 64)
	if topic == "" || perr != nil || oerr != nil || p < 0 || o < 0 {
		return ""
	}
	return payload.DerivedName(topic, p, o)
}

// Match reports whether r is in the filter: stamped in [f.From, f.To),
// its reason containing f.Reason (ignoring case) and its business topic
// f.Topic. Zero fields of f match everything.
func (f Filter) Match(r Record) bool {
	switch {
	case !f.From.IsZero() && r.Time.Before(f.From):
		return false
	case !f.To.IsZero() && !r.Time.Before(f.To):
		return false
	case f.Topic != "" && r.Business != f.Topic:
		return false
	case f.Reason != "" && !strings.Contains(strings.ToLower(r.Reason), strings.ToLower(f.Reason)):
		return false
	}
	return true
}

// Replay returns r as an input message again, for input or, when ingest
// read it from slow, for slow (a replay keeps the producer's lane):
//
//   - key, value and timestamp unchanged: the timestamp is the original
//     input's (ingest keeps it), so a delay-after resolves to the same due
//     time as the first time;
//   - the headers as the producer wrote them: everything but delay-error,
//     the delay-source-* headers and an earlier delay-replay-of; for a
//     refusal by the scanner that leaves delay-topic, delay-at and delay-id,
//     the task as it was stored;
//   - delay-id when the message has none (and is no delay-op): the name
//     ingest derived for it, its input position (delay-replay-source or the
//     delay-source-* headers), so the replayed copy is the same task as
//     whatever of the original was stored, and replaying twice is one task.
//     Without an input position the name is the failed message's position;
//   - delay-replay-of (r's position) and delay-replay-source (the first
//     input position, when known).
//
// It returns ErrDropped when r's contents were dropped.
func (r Record) Replay(input, slow string) (kafka.Message, error) {
	if r.Dropped {
		return kafka.Message{}, ErrDropped
	}
	m := r.Message
	origin := header(m, HeaderReplaySource)
	if origin == "" {
		origin = r.Source
	}
	headers := make([]kafka.Header, 0, len(m.Headers)+3)
	var hasID, hasOp bool
	for _, h := range m.Headers {
		switch h.Key {
		case payload.HeaderError, HeaderSourceTopic, HeaderSourcePartition, HeaderSourceOffset,
			HeaderReplayOf, HeaderReplaySource:
			continue
		case payload.HeaderID:
			hasID = true
		case payload.HeaderOp:
			hasOp = true
		}
		if strings.HasPrefix(h.Key, "delay-source-") {
			continue
		}
		headers = append(headers, h)
	}
	if !hasID && !hasOp {
		name := origin
		if name == "" {
			name = r.Position()
		}
		headers = append(headers, kafka.Header{Key: payload.HeaderID, Value: []byte(name)})
	}
	headers = append(headers, kafka.Header{Key: HeaderReplayOf, Value: []byte(r.Position())})
	if origin != "" {
		headers = append(headers, kafka.Header{Key: HeaderReplaySource, Value: []byte(origin)})
	}
	to := input
	if slow != "" && header(m, HeaderSourceTopic) == slow {
		to = slow
	}
	at := r.Time
	if at.IsZero() || at.UnixMilli() <= 0 {
		// kafka-go would send 0 for a zero time, which time-based retention
		// deletes at once.
		at = time.Now()
	}
	return kafka.Message{Topic: to, Key: m.Key, Value: m.Value, Headers: headers, Time: at}, nil
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

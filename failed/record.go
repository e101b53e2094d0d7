package failed

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// Headers of a failed message beside payload.HeaderError (the reason):
// where ingest read the message it could not accept, written by ingest as
// the message's last three headers. The scanner's refusals carry none of
// them. Input cannot carry them (payload.Provenance), and Parse trusts
// them only in that last place.
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
	// from the delay-source-* headers ingest wrote last; "" for a refusal
	// by the scanner (the task was stored; its ID and delay-at name it).
	Source string
	// Dropped is set when the contents were dropped to fit the failed
	// topic; such a record is listed but never replayed.
	Dropped bool
	Message payload.Message // as read
}

// Position returns "<topic>/<partition>/<offset>" of the failed message.
func (r Record) Position() string {
	return payload.DerivedName(r.Topic, r.Partition, r.Offset)
}

// Parse reads the delay headers of m, a message of the failed topic. When
// a header is given more than once, the first counts.
func Parse(m payload.Message) Record {
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

// source returns the input position of the delay-source-* headers ingest
// wrote, or "" when they are missing or malformed. Ingest
// writes them as the last three headers, after everything the producer
// wrote; the same headers anywhere else came from a producer (a task
// stored before Decode dropped them, refused by the scanner) and name
// nothing.
func source(m payload.Message) string {
	hs := m.Headers
	if len(hs) < 3 {
		return ""
	}
	t, ph, oh := hs[len(hs)-3], hs[len(hs)-2], hs[len(hs)-1]
	if t.Key != HeaderSourceTopic || ph.Key != HeaderSourcePartition || oh.Key != HeaderSourceOffset {
		return ""
	}
	p, perr := strconv.Atoi(string(ph.Value))
	o, oerr := strconv.ParseInt(string(oh.Value), 10, 64)
	if !topics.Legal(string(t.Value)) || perr != nil || oerr != nil || p < 0 || o < 0 {
		return ""
	}
	return payload.DerivedName(string(t.Value), p, o)
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
//   - the headers as the producer wrote them: everything but delay-error
//     and the provenance headers (payload.Provenance: delay-source-*,
//     delay-replay-of, delay-replay-source); for a refusal by the scanner
//     that leaves delay-topic, delay-at and delay-id, the task as it was
//     stored;
//   - delay-id when the message has none (and is no delay-op): the name
//     ingest derived for it, its input position (r.Source, from the
//     delay-source-* headers ingest wrote), so the replayed copy is the
//     same task as whatever of the original was stored, and replaying
//     twice is one task. Without an input position the name is the failed
//     message's position;
//   - delay-replay-of (r's position) and delay-replay-source (r.Source,
//     when known). Only r.Source names the task: a delay-replay-source in
//     a failed message may be a producer's.
//
// It returns ErrDropped when r's contents were dropped.
func (r Record) Replay(input, slow string) (payload.Message, error) {
	if r.Dropped {
		return payload.Message{}, ErrDropped
	}
	m := r.Message
	origin := r.Source
	headers := make([]payload.Header, 0, len(m.Headers)+3)
	var hasID, hasOp bool
	for _, h := range m.Headers {
		switch {
		case h.Key == payload.HeaderError || payload.Provenance(h.Key):
			continue
		case h.Key == payload.HeaderID:
			hasID = true
		case h.Key == payload.HeaderOp:
			hasOp = true
		}
		headers = append(headers, h)
	}
	if !hasID && !hasOp {
		name := origin
		if name == "" {
			name = r.Position()
		}
		headers = append(headers, payload.Header{Key: payload.HeaderID, Value: []byte(name)})
	}
	headers = append(headers, payload.Header{Key: HeaderReplayOf, Value: []byte(r.Position())})
	if origin != "" {
		headers = append(headers, payload.Header{Key: HeaderReplaySource, Value: []byte(origin)})
	}
	to := input
	if slow != "" && strings.HasPrefix(r.Source, slow+"/") {
		to = slow
	}
	at := r.Time
	if at.IsZero() || at.UnixMilli() <= 0 {
		// kafka-go would send 0 for a zero time, which time-based retention
		// deletes at once.
		at = time.Now()
	}
	return payload.Message{Topic: to, Key: m.Key, Value: m.Value, Headers: headers, Time: at}, nil
}

func header(m payload.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

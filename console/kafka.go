package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/failed"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// Writer writes messages that name their topic (producer.New's writer).
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// NewCanceller returns a Canceller that writes the cancel message of the
// wire contract (delay-op: cancel, delay-id, delay-at; without delay-at
// for a cancel by id alone) to delay-input.
func NewCanceller(w Writer) Canceller { return canceller{w} }

type canceller struct{ w Writer }

func (c canceller) Cancel(ctx context.Context, id string, execAt int64) error {
	hs := []kafka.Header{
		{Key: payload.HeaderOp, Value: []byte(payload.OpCancel)},
		{Key: payload.HeaderID, Value: []byte(id)},
	}
	if execAt != 0 {
		hs = append(hs, kafka.Header{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(execAt, 10))})
	}
	return c.w.WriteMessages(ctx, kafka.Message{Topic: topics.Input, Key: []byte(id), Headers: hs})
}

// NewFailedTopic returns a FailedTopic over delay-failed on brokers. It
// reads the newest messages of every partition with kafka-go's Client (no
// consumer group, nothing committed) and replays the picked ones with
// package failed, as delayctl replay does: to the input lane they came from,
// without delay-error and delay-source-*, traceable by delay-replay-of.
// auth secures the connections (nil: plaintext).
func NewFailedTopic(brokers []string, auth *kafkaauth.Auth, w Writer) FailedTopic {
	return &failedTopic{
		client: &kafka.Client{Addr: kafka.TCP(brokers...), Transport: auth.Transport(), Timeout: 10 * time.Second},
		cfg:    failed.Config{Brokers: brokers, Auth: auth}, w: w, topic: topics.Failed,
	}
}

type failedTopic struct {
	client *kafka.Client
	cfg    failed.Config
	w      Writer
	topic  string
}

// scanFactor is how many messages per asked-for one a filtered Browse reads
// back from the end of each partition.
const scanFactor = 10

func (f *failedTopic) Browse(ctx context.Context, q FailedQuery) ([]FailedMessage, error) {
	parts, err := f.partitions(ctx)
	if err != nil {
		return nil, err
	}
	back := int64(q.Limit)
	if q.Reason != "" {
		back *= scanFactor
	}
	filter := failed.Filter{Reason: q.Reason}
	var out []FailedMessage
	for _, p := range parts {
		first, last, err := f.offsets(ctx, p)
		if err != nil {
			return nil, err
		}
		err = f.read(ctx, p, max(first, last-back), last, func(m kafka.Message) {
			if r := failed.Parse(record.ToMessage(m)); filter.Match(r) {
				out = append(out, failedMessage(r))
			}
		})
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

func (f *failedTopic) Replay(ctx context.Context, refs []FailedRef) (int, error) {
	recs := make([]failed.Record, 0, len(refs))
	for _, ref := range refs {
		var found *kafka.Message
		err := f.read(ctx, ref.Partition, ref.Offset, ref.Offset+1, func(m kafka.Message) { found = &m })
		if found == nil && (err == nil || errors.Is(err, kafka.OffsetOutOfRange)) {
			// The caller's mistake, not a backend's: answered as it is.
			return 0, httpError{http.StatusNotFound, fmt.Sprintf("%s partition %d offset %d: no such message", f.topic, ref.Partition, ref.Offset)}
		}
		if err != nil {
			return 0, err
		}
		recs = append(recs, failed.Parse(record.ToMessage(*found)))
	}
	return failed.Resubmit(ctx, f.cfg, f.w, recs)
}

func (f *failedTopic) partitions(ctx context.Context) ([]int, error) {
	md, err := f.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{f.topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", f.topic, err)
	}
	for _, t := range md.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("metadata of %s: %w", f.topic, t.Error)
		}
		ps := make([]int, len(t.Partitions))
		for i, p := range t.Partitions {
			ps[i] = p.ID
		}
		sort.Ints(ps)
		return ps, nil
	}
	return nil, fmt.Errorf("metadata of %s: topic missing", f.topic)
}

func (f *failedTopic) offsets(ctx context.Context, p int) (first, last int64, err error) {
	res, err := f.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{f.topic: {kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p)}},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("offsets of %s/%d: %w", f.topic, p, err)
	}
	for _, po := range res.Topics[f.topic] {
		if po.Partition == p {
			if po.Error != nil {
				return 0, 0, fmt.Errorf("offsets of %s/%d: %w", f.topic, p, po.Error)
			}
			return po.FirstOffset, po.LastOffset, nil
		}
	}
	return 0, 0, fmt.Errorf("offsets of %s/%d: partition missing", f.topic, p)
}

// read calls fn for the messages of partition p with from <= offset < to.
func (f *failedTopic) read(ctx context.Context, p int, from, to int64, fn func(kafka.Message)) error {
	for from < to {
		res, err := f.client.Fetch(ctx, &kafka.FetchRequest{
			Topic: f.topic, Partition: p, Offset: from, MinBytes: 1, MaxBytes: 4 << 20, MaxWait: 100 * time.Millisecond,
		})
		if err != nil {
			return fmt.Errorf("fetch %s/%d@%d: %w", f.topic, p, from, err)
		}
		if res.Error != nil {
			return fmt.Errorf("fetch %s/%d@%d: %w", f.topic, p, from, res.Error)
		}
		next := from
		for next < to {
			r, err := res.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("read %s/%d@%d: %w", f.topic, p, next, err)
			}
			if r.Offset >= from && r.Offset < to {
				m, err := message(f.topic, p, r)
				if err != nil {
					return fmt.Errorf("read %s/%d@%d: %w", f.topic, p, r.Offset, err)
				}
				fn(m)
			}
			next = r.Offset + 1
		}
		if next == from { // nothing more (compacted or deleted): stop rather than spin
			return nil
		}
		from = next
	}
	return nil
}

// message turns a fetched record into the kafka.Message a Reader returns.
func message(topic string, p int, r *kafka.Record) (kafka.Message, error) {
	m := kafka.Message{Topic: topic, Partition: p, Offset: r.Offset, Time: r.Time, Headers: r.Headers}
	var err error
	if m.Key, err = readAll(r.Key); err != nil {
		return m, err
	}
	m.Value, err = readAll(r.Value)
	return m, err
}

func failedMessage(r failed.Record) FailedMessage {
	m := FailedMessage{
		FailedRef: FailedRef{Partition: r.Partition, Offset: r.Offset}, Time: r.Time, Reason: r.Reason,
		Business: r.Business, Source: r.Source, Dropped: r.Dropped, Key: r.Message.Key, Value: r.Message.Value,
	}
	for _, h := range r.Message.Headers {
		m.Headers = append(m.Headers, Header{Key: h.Key, Value: string(h.Value)})
	}
	return m
}

// readAll reads a record's key or value; nil stays nil.
func readAll(b kafka.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	defer b.Close()
	return io.ReadAll(b)
}

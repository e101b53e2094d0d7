package committed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchAPI "github.com/segmentio/kafka-go/protocol/fetch"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/kafkaauth"
)

// Defaults of Config.
const (
	DefaultMaxBytes = 10 << 20
	DefaultMaxWait  = 500 * time.Millisecond
	// retryPause is the wait before the fetch after a failed one.
	retryPause = 250 * time.Millisecond
	// chunk is the most records handed to FetchMessage at once: a
	// response's records go in chunks, so the Reader holds a chunk ahead
	// of its caller, not a whole response.
	chunk = 1000
)

// Config says what a Reader reads.
type Config struct {
	Brokers   []string        // default admin.DefaultBroker
	Auth      *kafkaauth.Auth // TLS and SASL; nil: plaintext
	Topic     string          // required
	Partition int
	// Offset is the first offset to read, or kafka.FirstOffset (the log
	// start) or kafka.LastOffset (the log end).
	Offset int64
	// MaxBytes of one fetch (default DefaultMaxBytes); a batch larger than
	// that still comes whole.
	MaxBytes int
	// MaxWait is how long a fetch waits for a record (default
	// DefaultMaxWait).
	MaxWait time.Duration
}

// Reader reads one partition read-committed; see the package doc. Its
// methods may not be called concurrently, except Close.
type Reader struct {
	cfg    Config
	client *kafka.Client

	start     sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	responses chan response

	buf []kafka.Message
}

// response is what one fetch yields: the records to deliver, or an error.
type response struct {
	msgs []kafka.Message
	err  error
}

// ErrClosed is returned by FetchMessage after Close.
var ErrClosed = errors.New("committed: reader closed")

// NewReader returns a Reader of cfg.Topic's partition cfg.Partition,
// positioned at cfg.Offset. It does not connect: the first FetchMessage
// does.
func NewReader(cfg Config) (*Reader, error) {
	if cfg.Topic == "" {
		return nil, errors.New("committed: no topic")
	}
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = []string{admin.DefaultBroker}
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Reader{
		cfg:       cfg,
		client:    &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: cfg.Auth.Transport()},
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		responses: make(chan response),
	}, nil
}

// FetchMessage returns the next committed record, waiting for one until
// ctx ends. A fetch error is returned once (explained when it is a TLS or
// SASL failure); the next call goes on where the last record left off.
func (r *Reader) FetchMessage(ctx context.Context) (kafka.Message, error) {
	r.start.Do(func() { go r.run() })
	for len(r.buf) == 0 {
		select {
		case res := <-r.responses:
			if res.err != nil {
				return kafka.Message{}, res.err
			}
			r.buf = res.msgs
		case <-ctx.Done():
			return kafka.Message{}, ctx.Err()
		case <-r.ctx.Done():
			return kafka.Message{}, ErrClosed
		}
	}
	m := r.buf[0]
	r.buf = r.buf[1:]
	return m, nil
}

// Close stops the fetching goroutine and waits for it. It is idempotent.
func (r *Reader) Close() error {
	r.cancel()
	r.start.Do(func() { close(r.done) }) // never started: nothing to wait for
	<-r.done
	return nil
}

// run fetches until Close, handing each non-empty response (or error) to
// FetchMessage.
func (r *Reader) run() {
	defer close(r.done)
	offset := r.cfg.Offset
	for r.ctx.Err() == nil {
		var err error
		if offset < 0 {
			offset, err = r.resolve(offset)
		} else {
			offset, err = r.fetch(offset)
		}
		if err == nil || !r.send(response{err: err}) {
			continue
		}
		select {
		case <-time.After(retryPause):
		case <-r.ctx.Done():
		}
	}
}

// send hands res to FetchMessage; false when the Reader was closed first.
func (r *Reader) send(res response) bool {
	select {
	case r.responses <- res:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// resolve turns kafka.FirstOffset or kafka.LastOffset into an offset.
func (r *Reader) resolve(which int64) (int64, error) {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	req := kafka.OffsetRequest{Partition: r.cfg.Partition, Timestamp: which}
	res, err := r.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{r.cfg.Topic: {req}}, IsolationLevel: kafka.ReadCommitted,
	})
	if err != nil {
		err = r.cfg.Auth.Diagnose(ctx, r.client, err)
		return which, fmt.Errorf("committed: %s/%d: list offsets: %w", r.cfg.Topic, r.cfg.Partition, err)
	}
	for _, po := range res.Topics[r.cfg.Topic] {
		switch {
		case po.Partition != r.cfg.Partition:
		case po.Error != nil:
			return which, fmt.Errorf("committed: %s/%d: list offsets: %w", r.cfg.Topic, r.cfg.Partition, po.Error)
		case which == kafka.FirstOffset:
			return po.FirstOffset, nil
		default:
			return po.LastOffset, nil
		}
	}
	return which, fmt.Errorf("committed: %s/%d: list offsets: no answer", r.cfg.Topic, r.cfg.Partition)
}

// fetch sends one read-committed Fetch from offset, hands the records to
// deliver to FetchMessage in chunks, and returns the offset after
// everything the response held (after what it handed over, on an error).
func (r *Reader) fetch(offset int64) (int64, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.MaxWait+30*time.Second)
	defer cancel()
	m, err := r.cfg.Auth.Transport().RoundTrip(ctx, r.client.Addr, &fetchAPI.Request{
		ReplicaID:      -1,
		MaxWaitTime:    int32(r.cfg.MaxWait.Milliseconds()),
		MinBytes:       1,
		MaxBytes:       int32(r.cfg.MaxBytes),
		IsolationLevel: int8(kafka.ReadCommitted),
		SessionID:      -1,
		SessionEpoch:   -1,
		Topics: []fetchAPI.RequestTopic{{
			Topic: r.cfg.Topic,
			Partitions: []fetchAPI.RequestPartition{{
				Partition: int32(r.cfg.Partition), CurrentLeaderEpoch: -1,
				FetchOffset: offset, LogStartOffset: -1, PartitionMaxBytes: int32(r.cfg.MaxBytes),
			}},
		}},
	})
	if err != nil {
		err = r.cfg.Auth.Diagnose(ctx, r.client, err)
		return offset, fmt.Errorf("committed: fetch %s/%d at %d: %w", r.cfg.Topic, r.cfg.Partition, offset, err)
	}
	res := m.(*fetchAPI.Response)
	if res.ErrorCode != 0 {
		return offset, fmt.Errorf("committed: fetch %s/%d at %d: %w", r.cfg.Topic, r.cfg.Partition, offset, kafka.Error(res.ErrorCode))
	}
	if len(res.Topics) != 1 || len(res.Topics[0].Partitions) != 1 {
		return offset, fmt.Errorf("committed: fetch %s/%d at %d: no answer for the partition", r.cfg.Topic, r.cfg.Partition, offset)
	}
	p := &res.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		err := kafka.Error(p.ErrorCode)
		if errors.Is(err, kafka.OffsetOutOfRange) && offset < p.LogStartOffset {
			// Retention deleted what was not read yet: go on from the start.
			return p.LogStartOffset, fmt.Errorf("committed: %s/%d: offset %d was deleted, going on from %d: %w",
				r.cfg.Topic, r.cfg.Partition, offset, p.LogStartOffset, err)
		}
		return offset, fmt.Errorf("committed: fetch %s/%d at %d: %w", r.cfg.Topic, r.cfg.Partition, offset, err)
	}
	var (
		out     = make([]kafka.Message, 0, chunk)
		handed  = offset // after the last record handed over
		stopped bool
	)
	next, err := filter(p, r.cfg.Topic, offset, func(m kafka.Message) bool {
		out = append(out, m)
		if len(out) == chunk {
			if stopped = !r.send(response{msgs: out}); stopped {
				return false
			}
			handed, out = m.Offset+1, make([]kafka.Message, 0, chunk)
		}
		return true
	})
	if len(out) > 0 && !stopped && err == nil && r.send(response{msgs: out}) {
		handed = out[len(out)-1].Offset + 1
	}
	if err != nil {
		return handed, fmt.Errorf("committed: %s/%d at %d: %w", r.cfg.Topic, r.cfg.Partition, handed, err)
	}
	return next, nil
}

// filter calls emit with each record of p at or after offset that a
// read-committed consumer delivers, in order, until emit returns false,
// and returns the offset after the last record p held (delivered or not).
// Which batches are delivered is aborts' to say; filter reads the records.
func filter(p *fetchAPI.ResponsePartition, topic string, offset int64, emit func(kafka.Message) bool) (int64, error) {
	stream, ok := p.RecordSet.Records.(*protocol.RecordStream)
	if !ok || stream == nil {
		return offset, nil
	}
	r := reading{topic: topic, partition: int(p.Partition), hwm: p.HighWatermark, from: offset, next: offset, emit: emit}
	ab := newAborts(p.AbortedTransactions)
	for _, batch := range stream.Records {
		var err error
		more := true
		switch b := batch.(type) {
		case *protocol.ControlBatch:
			err = r.markers(b, ab)
		case *protocol.RecordBatch:
			more, err = r.records(b, ab.deliver(b.BaseOffset, b.ProducerID, b.Attributes.Transactional()))
		default: // a message set of the old format: no transactions
			more, err = r.records(b, true)
		}
		if err != nil {
			return offset, err
		}
		if !more {
			break
		}
	}
	return r.next, nil
}

// reading is filter's walk over one partition's records.
type reading struct {
	topic     string
	partition int
	hwm       int64
	from      int64 // the first offset to deliver
	next      int64 // after the last record read
	emit      func(kafka.Message) bool
}

// markers reads the transaction markers of control batch b into ab.
func (r *reading) markers(b *protocol.ControlBatch, ab *aborts) error {
	for {
		cr, err := b.ReadControlRecord()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("control batch at %d: %w", b.BaseOffset, err)
		}
		r.next = max(r.next, cr.Offset+1)
		ab.marker(b.ProducerID, cr.Type)
	}
}

// records reads the records of batch, emitting those at or after r.from
// when deliver; false when emit asked to stop.
func (r *reading) records(batch protocol.RecordReader, deliver bool) (bool, error) {
	for {
		rec, err := batch.ReadRecord()
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("record after %d: %w", r.next-1, err)
		}
		r.next = max(r.next, rec.Offset+1)
		if !deliver || rec.Offset < r.from {
			closeRecord(rec)
			continue
		}
		m, err := message(rec, r.topic, r.partition, r.hwm)
		if err != nil {
			return false, err
		}
		if !r.emit(m) {
			return false, nil
		}
	}
}

// message copies rec into a kafka.Message.
func message(rec *protocol.Record, topic string, partition int, hwm int64) (kafka.Message, error) {
	defer closeRecord(rec)
	key, err := protocol.ReadAll(rec.Key)
	if err != nil {
		return kafka.Message{}, fmt.Errorf("key of %d: %w", rec.Offset, err)
	}
	value, err := protocol.ReadAll(rec.Value)
	if err != nil {
		return kafka.Message{}, fmt.Errorf("value of %d: %w", rec.Offset, err)
	}
	return kafka.Message{
		Topic: topic, Partition: partition, Offset: rec.Offset, HighWaterMark: hwm,
		Key: key, Value: value, Headers: headers(rec.Headers), Time: rec.Time,
	}, nil
}

// headers copies hs: the record's may be reused by the next record.
func headers(hs []kafka.Header) []kafka.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]kafka.Header, len(hs))
	for i, h := range hs {
		out[i] = kafka.Header{Key: h.Key, Value: slices.Clone(h.Value)}
	}
	return out
}

func closeRecord(rec *protocol.Record) {
	if rec.Key != nil {
		rec.Key.Close()
	}
	if rec.Value != nil {
		rec.Value.Close()
	}
}

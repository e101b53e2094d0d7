package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// Headers the ingester adds to a message it writes to the failed topic,
// beside payload.HeaderError (the reason).
const (
	HeaderSourceTopic     = "delay-source-topic"
	HeaderSourcePartition = "delay-source-partition"
	HeaderSourceOffset    = "delay-source-offset"
)

// Operations retried by handle, the values of the op label of
// delayq_ingest_retries_total.
const (
	opPut    = "put"
	opAdd    = "add"
	opFailed = "failed"
)

// outcome counts what a handled batch did, for metrics once it is safe.
type outcome struct {
	accepted, cancels int
	failed            map[string]int // by reason
}

// handle stores one batch: decode, Store.Put, Index.Add, failed-topic routing.
// It returns nil when every message is either stored in both stores or
// written to the failed topic, so the batch may be committed. An error means
// the failed topic could not be written (or ctx ended): the batch must not be
// committed and may be handled again.
func (in *Ingester) handle(ctx context.Context, msgs []kafka.Message, now time.Time) error {
	out := outcome{failed: map[string]int{}}
	tasks := make([]payload.Task, 0, len(msgs))
	src := make([]int, 0, len(msgs)) // src[i] = index in msgs of tasks[i]
	var failed []kafka.Message
	for i, m := range msgs {
		t, err := payload.Decode(m, now, in.cfg.Decode)
		if err != nil {
			in.log.Debug("message rejected", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
			failed = append(failed, in.failedMessage(m, err.Error()))
			out.failed[ReasonContract]++
			continue
		}
		tasks = append(tasks, t)
		src = append(src, i)
	}

	if len(tasks) > 0 {
		reason, err := in.store(ctx, tasks)
		switch {
		case err == nil:
			for _, t := range tasks {
				if t.Cancel {
					out.cancels++
				} else {
					out.accepted++
				}
			}
		case ctx.Err() != nil:
			// Stopping (or out of time): not the store's fault. Leave the batch
			// uncommitted; it is read again.
			return fmt.Errorf("ingest: store %d tasks: %w", len(tasks), err)
		default:
			in.log.Error("batch not stored, sending it to the failed topic",
				"tasks", len(tasks), "reason", reason, "err", err)
			text := reason + ": " + err.Error()
			for _, i := range src {
				failed = append(failed, in.failedMessage(msgs[i], text))
			}
			out.failed[reason] += len(tasks)
		}
	}

	if len(failed) > 0 {
		if err := in.writeFailed(ctx, failed); err != nil {
			return fmt.Errorf("ingest: write %d messages to %s: %w", len(failed), in.cfg.Failed, err)
		}
	}

	in.m.accepted.Add(float64(out.accepted))
	in.m.cancels.Add(float64(out.cancels))
	for reason, n := range out.failed {
		in.m.failed.WithLabelValues(reason).Add(float64(n))
	}
	return nil
}

// store puts tasks in the Store, then indexes the non-cancel ones. On failure
// it returns the reason label (ReasonStore or ReasonIndex) with the error.
func (in *Ingester) store(ctx context.Context, tasks []payload.Task) (string, error) {
	err := in.retry(ctx, opPut, func(ctx context.Context) error {
		return in.st.Put(ctx, tasks)
	})
	if err != nil {
		return ReasonStore, fmt.Errorf("put: %w", err)
	}
	entries := make([]zset.Entry, 0, len(tasks))
	for _, t := range tasks {
		if !t.Cancel {
			entries = append(entries, zset.Entry{ID: t.ID, ExecAt: t.ExecAt})
		}
	}
	if len(entries) == 0 {
		return "", nil
	}
	err = in.retry(ctx, opAdd, func(ctx context.Context) error {
		// A fresh now per attempt: an entry whose segment ended while we
		// retried must go to a segment that is still scanned.
		return in.ix.Add(ctx, time.Now(), entries)
	})
	if err != nil {
		return ReasonIndex, fmt.Errorf("add: %w", err)
	}
	return "", nil
}

// retry calls fn up to Retries times, each call bounded by CallTimeout, with
// exponential backoff between calls. It returns the last error.
func (in *Ingester) retry(ctx context.Context, op string, fn func(context.Context) error) error {
	backoff := in.cfg.Backoff
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, in.cfg.CallTimeout)
		err := fn(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if attempt >= in.cfg.Retries || ctx.Err() != nil {
			return fmt.Errorf("%d attempts: %w", attempt, err)
		}
		in.m.retries.WithLabelValues(op).Inc()
		in.log.Warn("call failed, retrying", "op", op, "attempt", attempt, "backoff", backoff, "err", err)
		if sleep(ctx, backoff) != nil {
			return fmt.Errorf("%d attempts, then %w: %w", attempt, context.Cause(ctx), err)
		}
		backoff = min(2*backoff, in.cfg.MaxBackoff)
	}
}

// writeFailed writes msgs to the failed topic, retrying only the messages
// that failed. A message too large for the writer or the broker is written
// again without its value (and then without its key and original headers),
// so an oversized input can never stall its partition.
func (in *Ingester) writeFailed(ctx context.Context, msgs []kafka.Message) error {
	pending := msgs
	return in.retry(ctx, opFailed, func(ctx context.Context) error {
		// Each message shrinks at most twice; then give up on this attempt.
		for range 2*len(msgs) + 1 {
			err := in.w.WriteMessages(ctx, pending...)
			if err == nil {
				return nil
			}
			var tooLarge kafka.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				// The writer refused one message before sending anything.
				pending = append(tooLarge.Remaining, shrink(tooLarge.Message))
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
					next = append(next, shrink(pending[i]))
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
// headers (minus stale failure headers), the reason and the source position.
func (in *Ingester) failedMessage(m kafka.Message, reason string) kafka.Message {
	headers := make([]kafka.Header, 0, len(m.Headers)+4)
	for _, h := range m.Headers {
		if !failureHeader(h.Key) {
			headers = append(headers, h)
		}
	}
	headers = append(headers,
		kafka.Header{Key: payload.HeaderError, Value: []byte(reason)},
		kafka.Header{Key: HeaderSourceTopic, Value: []byte(m.Topic)},
		kafka.Header{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(m.Partition))},
		kafka.Header{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
	)
	// Keep the input's timestamp; kafka-go would send 0 for a zero Time,
	// which time-based retention deletes at once.
	at := m.Time
	if at.IsZero() {
		at = time.Now()
	}
	return kafka.Message{Topic: in.cfg.Failed, Key: m.Key, Value: m.Value, Headers: headers, Time: at}
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
func shrink(m kafka.Message) kafka.Message {
	var kept []kafka.Header
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
	var pos []kafka.Header
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
	m.Headers = append(append(kept, kafka.Header{Key: payload.HeaderError, Value: []byte(reason)}), pos...)
	return m
}

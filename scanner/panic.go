package scanner

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// ReasonInternal is the delay-error of a task whose handling panicked (a
// bug, in delayq or a store client): it goes to the failed topic, so that
// its zset drains and the worker keeps running.
const ReasonInternal = "internal error"

// reasonInternal is the reason label of delayq_tasks_failed_total for it.
const reasonInternal = "internal"

// panicked is a panic recovered while handling tasks.
type panicked struct {
	value any
	stack []byte
}

// catch recovers a panic into *p; deferred by the calls that isolate one.
func catch(p **panicked) {
	if v := recover(); v != nil {
		*p = &panicked{value: v, stack: debug.Stack()}
	}
}

// get reads refs from the store in one Get, retried while ctx lives, like
// Store.Get. When the Get panics (a row the store cannot read), the refs
// are read again in halves down to the ones that panic alone, which come
// back nil with their panic in bad. It returns an error only when ctx
// ended first.
func (w *worker) get(ctx context.Context, refs []payload.Ref) (tasks []*payload.Task, bad map[int]*panicked, err error) {
	var p *panicked
	err = w.s.stage.Do(ctx, "get", w.s.policy, func(ctx context.Context) error {
		defer catch(&p)
		got, err := w.s.store.Get(ctx, refs)
		if err != nil {
			return err
		}
		if len(got) != len(refs) {
			return fmt.Errorf("%w: %d rows for %d refs", ErrStore, len(got), len(refs))
		}
		tasks = got
		return nil
	})
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("scanner: get %d tasks: %w", len(refs), err)
	case p == nil:
		return tasks, nil, nil
	case len(refs) == 1:
		return []*payload.Task{nil}, map[int]*panicked{0: p}, nil
	}
	mid := len(refs) / 2
	lo, badLo, err := w.get(ctx, refs[:mid])
	if err != nil {
		return nil, nil, err
	}
	hi, badHi, err := w.get(ctx, refs[mid:])
	if err != nil {
		return nil, nil, err
	}
	bad = badLo
	for i, p := range badHi {
		if bad == nil {
			bad = make(map[int]*panicked)
		}
		bad[mid+i] = p
	}
	return append(lo, hi...), bad, nil
}

// internal turns d, whose handling panicked with p, into its failed-topic
// message with reason ReasonInternal, and logs the panic with the task's
// coordinates. d.task may be a stand-in holding only the id and due time
// (the store could not read the row).
func (s *Scanner) internal(d *delivery, p *panicked) {
	s.log.Error("panic while handling a task, sending it to the failed topic", "zset", d.entry.z.key,
		"id", d.task.Name, "exec_at", d.task.ExecAt, "topic", d.task.Topic,
		"panic", fmt.Sprint(p.value), "stack", string(p.stack))
	if d.msg.Topic == "" && d.msg.Headers == nil {
		d.msg = kafka.Message{Key: d.task.Key, Value: d.task.Value, Headers: []kafka.Header{
			{Key: payload.HeaderID, Value: []byte(d.task.Name)},
			{Key: payload.HeaderAt, Value: []byte(payload.FormatTime(d.task.ExecAt))},
		}}
	}
	s.toFailed(d, ReasonInternal)
	d.reason = reasonInternal
}

// deliveryFor is the delivery of task, read for e; a panic while building
// it sends the task to the failed topic instead (internal).
func (w *worker) deliveryFor(e entry, task *payload.Task) (d *delivery) {
	d = &delivery{entry: e, task: task, index: -1}
	var p *panicked
	func() {
		defer catch(&p)
		msg := payload.Deliverable(*task)
		d.msg = record.FromMessage(msg)
		switch {
		case payload.IsCheck(*task):
			// A reschedule whose task never came: ingest stored its
			// failed-topic message, sent as it is.
			d.msg = kafka.Message{Topic: w.s.cfg.FailedTopic, Key: task.Key, Value: task.Value, Headers: record.FromHeaders(task.Headers)}
			d.failed, d.reason = true, reasonLifecycle
		case task.Topic == "":
			w.s.redirect(d, "no business topic")
		case topics.Internal(task.Topic):
			w.s.redirect(d, "internal topic "+task.Topic)
		default:
			d.msg.Headers = record.FromHeaders(w.s.cfg.Tracer.Deliver(msg, task.Name, task.ExecAt))
		}
	}()
	if p != nil {
		d.msg, d.failed = kafka.Message{}, false
		w.s.internal(d, p)
	}
	return d
}

// standIn is the task of an entry whose row the store could not read.
func standIn(e entry) *payload.Task {
	return &payload.Task{ID: e.ID, Name: strconv.FormatUint(e.ID, 10), ExecAt: e.ExecAt}
}

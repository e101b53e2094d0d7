package scanner

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
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

// loader reads the tasks of due entries and turns them into deliveries
// (load.go), plans the next occurrences of recurring ones (recur.go) and
// applies the topics' controls (control.go). It holds no state.
type loader struct{ s *Scanner }

// get reads refs from the store in one Get, retried while ctx lives, like
// Store.Get. When the Get panics (a row the store cannot read), the refs
// are read again in halves down to the ones that panic alone, which come
// back nil with their panic in bad. It returns an error only when ctx
// ended first.
func (l loader) get(ctx context.Context, refs []payload.Ref) (tasks []*payload.Task, bad map[int]*panicked, err error) {
	var p *panicked
	err = l.s.stage.Do(ctx, "get", l.s.policy, func(ctx context.Context) error {
		defer catch(&p)
		got, err := l.s.store.Get(ctx, refs)
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
	lo, badLo, err := l.get(ctx, refs[:mid])
	if err != nil {
		return nil, nil, err
	}
	hi, badHi, err := l.get(ctx, refs[mid:])
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
	d.toFailed(s.cfg.FailedTopic, ReasonInternal)
	d.reason = reasonInternal
}

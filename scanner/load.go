package scanner

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
	"github.com/delayq/delayq/zset"
)

// ErrStore is wrapped when the store answers out of contract.
var ErrStore = errors.New("scanner: store answer out of contract")

// missingLogRate caps the WARN lines about missing rows per second; the
// rest are counted in the next line (and all in delayq_tasks_missing_total).
const missingLogRate = 10

// entry is a due zset member (id, exec_at) of the zset z, on its way out.
type entry struct {
	z *zsetScan
	zset.Entry
}

// settle records that e may leave its zset: its message was produced, or
// it needs none (cancelled, missing, dropped).
func (e entry) settle() {
	e.z.settled = append(e.z.settled, e.Entry)
	delete(e.z.parked, e.Entry)
}

// load reads the tasks of es from the store in one Get, retried while ctx
// lives, and returns the deliveries: the message of every task to deliver,
// or its failed-topic form when it names no business topic or an internal
// one. Cancelled and missing entries are settled at once. The next
// occurrences of recurring tasks are stored and indexed before it returns
// (recur.go). It returns an
// error only when ctx ended first.
func (l loader) load(ctx context.Context, es []entry) ([]*delivery, error) {
	refs := make([]payload.Ref, len(es))
	for i, e := range es {
		refs[i] = payload.Ref{ID: e.ID, ExecAt: e.ExecAt}
	}
	tasks, bad, err := l.get(ctx, refs)
	if err != nil {
		return nil, err
	}
	var (
		ds        []*delivery
		cancelled int
	)
	for i, task := range tasks {
		e := es[i]
		switch {
		case bad[i] != nil:
			d := &delivery{entry: e, task: standIn(e), index: -1}
			l.s.internal(d, bad[i])
			ds = append(ds, d)
		case task == nil:
			l.s.missing(e)
			e.settle()
		case task.Cancel:
			cancelled++
			e.settle()
		default:
			ds = append(ds, l.deliveryFor(e, task))
		}
	}
	stopped, err := l.recur(ctx, ds)
	if err != nil {
		return nil, err
	}
	if len(stopped) > 0 {
		kept := ds[:0]
		for _, d := range ds {
			if stopped[d] {
				cancelled++
				d.entry.settle()
				continue
			}
			kept = append(kept, d)
		}
		ds = kept
	}
	l.s.m.cancelled.Add(float64(cancelled))
	return ds, nil
}

// missing counts and logs a due entry without a payload row: it expired
// (a scanner behind by more than the retention), was never stored, or the
// instances disagree on the salts. The entry is removed.
func (s *Scanner) missing(e entry) {
	s.m.missing.Inc()
	ok, suppressed := s.missingLog.allow(time.Now())
	if !ok {
		return
	}
	args := []any{"zset", e.z.key, "id", e.ID, "exec_at", time.UnixMilli(e.ExecAt).UTC().Format(time.RFC3339Nano)}
	if suppressed > 0 {
		args = append(args, "not_logged_before", suppressed)
	}
	s.log.Warn("task row missing, entry removed", args...)
}

// deliveryFor is the delivery of task, read for e; a panic while building
// it sends the task to the failed topic instead (internal).
func (l loader) deliveryFor(e entry, task *payload.Task) (d *delivery) {
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
			d.msg = kafka.Message{Topic: l.s.cfg.FailedTopic, Key: task.Key, Value: task.Value, Headers: record.FromHeaders(task.Headers)}
			d.failed, d.reason = true, reasonLifecycle
		case task.Topic == "":
			l.s.redirect(d, "no business topic")
		case topics.Internal(task.Topic):
			l.s.redirect(d, "internal topic "+task.Topic)
		default:
			d.msg.Headers = record.FromHeaders(l.s.cfg.Tracer.Deliver(msg, task.Name, task.ExecAt))
		}
	}()
	if p != nil {
		d.msg, d.failed = kafka.Message{}, false
		l.s.internal(d, p)
	}
	return d
}

// standIn is the task of an entry whose row the store could not read.
func standIn(e entry) *payload.Task {
	return &payload.Task{ID: e.ID, Name: strconv.FormatUint(e.ID, 10), ExecAt: e.ExecAt}
}

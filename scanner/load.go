package scanner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/delayq/delayq/payload"
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
func (w *worker) load(ctx context.Context, es []entry) ([]*delivery, error) {
	refs := make([]payload.Ref, len(es))
	for i, e := range es {
		refs[i] = payload.Ref{ID: e.ID, ExecAt: e.ExecAt}
	}
	tasks, bad, err := w.get(ctx, refs)
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
			w.s.internal(d, bad[i])
			ds = append(ds, d)
		case task == nil:
			w.s.missing(e)
			e.settle()
		case task.Cancel:
			cancelled++
			e.settle()
		default:
			ds = append(ds, w.deliveryFor(e, task))
		}
	}
	stopped, err := w.recur(ctx, ds)
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
	w.s.m.cancelled.Add(float64(cancelled))
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

// limiter allows up to rate events a second and counts the others.
// unauthorized logs, at missingLogRate lines a second, that d waits for
// an ACL: delayd's Kafka principal may not write its topic.
func (s *Scanner) unauthorized(d *delivery, err error) {
	s.m.unauthorized.Inc()
	if ok, suppressed := s.authLog.allow(time.Now()); ok {
		s.log.Warn("delivery waits: delayd is not authorized to write the topic (grant its Kafka principal WRITE and DESCRIBE on it)",
			"topic", d.task.Topic, "id", d.task.Name, "attempts", d.attempts, "suppressed", suppressed, "err", err)
	}
}

type limiter struct {
	rate int

	mu         sync.Mutex
	second     int64 // unix second of the current window
	n          int   // events allowed in it
	suppressed int   // events refused since the last allowed one
}

func newLimiter(rate int) *limiter { return &limiter{rate: rate} }

// allow reports whether an event at now may be logged and how many were
// refused since the last one that was.
func (l *limiter) allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sec := now.Unix(); sec != l.second {
		l.second, l.n = sec, 0
	}
	if l.n >= l.rate {
		l.suppressed++
		return false, 0
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

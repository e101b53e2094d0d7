package scanner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/taskstate"
	"github.com/delayq/delayq/zset"
)

// Recurring tasks (payload.Series): a delivered occurrence plans the next.
//
// The next occurrence is the same task (id, name, topic, key, value,
// headers) due at the next time of its series, with delay-occurrence one
// higher. The scanner stores its row (Store.Put) and indexes it
// (Index.Add), and records it as the name's current due time in its id
// row (track, Store.PutIDs), all before the current occurrence is produced, so
// before its entry is removed: a crash anywhere leaves the current entry
// in the index (delivered again: at least once) and the next one stored
// or about to be stored again. Planning is a pure function of the current
// occurrence (payload.NextOccurrence), and the same id + exec_at stored
// and indexed twice is one task, so a replayed scan never forks a series.
//
// A cancel stops the series: a cancel by id and due time marks the row of
// the pending occurrence, which the scanner then drops without planning
// another; a cancel by id alone marks the occurrence its id row names
// (ingest), and the id row's cancel flag marks every occurrence the
// scanner plans after it (track); the scanner reads it back before it
// delivers any occurrence, and does not deliver one of a cancelled name,
// which covers a cancel that came between a next occurrence's indexing
// and its id-row write (a crash there). A reschedule moves the pending
// occurrence (the id row's current due time); the series goes on from
// the new time.

type recurMetrics struct {
	planned prometheus.Counter
	ended   *prometheus.CounterVec
}

// Values of the reason label of delayq_recurring_ended_total.
const (
	endDone    = "done"    // count or until reached, or no further cron time
	endInvalid = "invalid" // the stored recurrence cannot be planned (unknown zone, gap over MaxDelay)
)

func newRecurMetrics(reg prometheus.Registerer) (*recurMetrics, error) {
	var errs []error
	m := &recurMetrics{
		planned: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_recurring_planned_total",
			Help: "Next occurrences of recurring tasks stored and indexed by the scanner.",
		})),
		ended: metric.Register(reg, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_recurring_ended_total",
			Help: "Recurring series that ended with a delivered occurrence, by reason (done, invalid).",
		}, []string{"reason"})),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("scanner: metrics: %w", err)
	}
	return m, nil
}

// recur plans the next occurrence of every recurring task in ds that goes
// to its business topic, and stores, indexes and tracks them, retried
// while ctx lives. It returns the deliveries of ds not to make: the
// occurrences whose names are cancelled by id alone (their entries are
// settled like those of cancelled rows). It returns an error only when
// ctx ended first; the caller then delivers nothing of ds, whose entries
// stay in the index.
func (l loader) recur(ctx context.Context, ds []*delivery) (map[*delivery]bool, error) {
	next, cur := l.plan(ds)
	if len(cur) == 0 {
		return nil, nil
	}
	if len(next) > 0 {
		if err := l.store(ctx, next); err != nil {
			return nil, err
		}
	}
	stopped, err := l.track(ctx, cur, next)
	if err != nil {
		return nil, err
	}
	l.s.recurM.planned.Add(float64(len(next)))
	return stopped, nil
}

// plan returns the next occurrences of the recurring tasks of ds, and
// those deliveries (cur), planned or ending.
func (l loader) plan(ds []*delivery) (next []payload.Task, cur []*delivery) {
	for _, d := range ds {
		if d.failed {
			continue // refused for good: the series ends on delay-failed
		}
		var (
			n   payload.Task
			ok  bool
			err error
			p   *panicked
		)
		func() {
			defer catch(&p)
			n, ok, err = payload.NextOccurrence(*d.task, l.s.cfg.MaxDelay)
		}()
		switch {
		case p != nil:
			l.s.internal(d, p)
		case err != nil:
			l.s.recurM.ended.WithLabelValues(endInvalid).Inc()
			l.s.log.Error("recurring task ends: next occurrence not planned", "id", d.task.Name,
				"exec_at", d.task.ExecAt, "err", err)
		case ok:
			next = append(next, n)
			cur = append(cur, d)
		default:
			if _, _, recurs, _ := payload.Series(*d.task); recurs {
				l.s.recurM.ended.WithLabelValues(endDone).Inc()
				cur = append(cur, d)
			}
		}
	}
	return next, cur
}

// store stores and indexes next occurrences.
func (l loader) store(ctx context.Context, next []payload.Task) error {
	err := l.s.stage.Do(ctx, "put_next", l.s.policy, func(ctx context.Context) error {
		return l.s.store.Put(ctx, next)
	})
	if err != nil {
		return fmt.Errorf("scanner: store %d next occurrences: %w", len(next), err)
	}
	entries := make([]zset.Entry, len(next))
	for i, t := range next {
		entries[i] = zset.Entry{ID: t.ID, ExecAt: t.ExecAt}
	}
	err = l.s.stage.Do(ctx, "add_next", l.s.policy, func(ctx context.Context) error {
		err := l.s.ix.Add(ctx, time.Now(), entries)
		if errors.Is(err, zset.ErrBadEntry) {
			// An entry Add refuses can never be indexed (payload.Decode
			// admits none such): log it, index the others (Add did).
			l.s.log.Error("next occurrence refused by the index", "err", err)
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("scanner: index %d next occurrences: %w", len(next), err)
	}
	return nil
}

// track records each next occurrence as its name's current due time
// (taskstate.Track), then reads the id rows of the current occurrences
// back: it marks the next occurrences of names cancelled by id alone or
// replaced (taskstate.Stopped) and returns the current ones of those names, not to
// be delivered. The read covers a cancel that came after a crash had
// stored and indexed the next occurrence but not yet recorded it (the
// cancel then marked the current one only). Doing it twice is harmless.
func (l loader) track(ctx context.Context, cur []*delivery, next []payload.Task) (map[*delivery]bool, error) {
	occ := make([]taskstate.Occurrence, len(next))
	for i, t := range next {
		occ[i] = taskstate.Occurrence{ID: t.ID, Name: t.Name, At: t.ExecAt}
	}
	if len(occ) > 0 {
		err := l.s.stage.Do(ctx, "put_ids", l.s.policy, func(ctx context.Context) error {
			return l.s.store.PutIDs(ctx, taskstate.Track(occ))
		})
		if err != nil {
			return nil, fmt.Errorf("scanner: record %d next occurrences in their id rows: %w", len(next), err)
		}
	}
	keys := make([]uint64, len(cur))
	for i, d := range cur {
		keys[i] = d.task.ID
	}
	var states []payload.IDState
	err := l.s.stage.Do(ctx, "get_ids", l.s.policy, func(ctx context.Context) (err error) {
		states, err = l.s.store.GetIDs(ctx, keys)
		if err == nil && len(states) != len(keys) {
			err = fmt.Errorf("%w: %d id rows for %d ids", ErrStore, len(states), len(keys))
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("scanner: read %d id rows: %w", len(keys), err)
	}
	byID := map[uint64]payload.IDState{}
	stopped := map[*delivery]bool{}
	for i, d := range cur {
		byID[d.task.ID] = states[i]
		if states[i].Over() {
			stopped[d] = true
		}
	}
	nextStates := make([]payload.IDState, len(occ))
	for i, o := range occ {
		nextStates[i] = byID[o.ID]
	}
	return stopped, l.mark(ctx, taskstate.Stopped(occ, nextStates))
}

// mark puts the cancel markers of stopped next occurrences.
func (l loader) mark(ctx context.Context, stopped []taskstate.Mark) error {
	if len(stopped) == 0 {
		return nil
	}
	markers := make([]payload.Task, len(stopped))
	for i, m := range stopped {
		markers[i] = payload.Task{ID: m.ID, Name: m.Name, ExecAt: m.At, Cancel: true}
	}
	err := l.s.stage.Do(ctx, "cancel_next", l.s.policy, func(ctx context.Context) error {
		return l.s.store.Put(ctx, markers)
	})
	if err != nil {
		return fmt.Errorf("scanner: cancel %d next occurrences: %w", len(markers), err)
	}
	return nil
}

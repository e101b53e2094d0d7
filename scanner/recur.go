package scanner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
	"github.com/delayq/delayq/payload"
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
// scanner plans after it (track). A reschedule moves the pending
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
// while ctx lives. It returns an error only when ctx ended first; the
// caller then delivers nothing of ds, whose entries stay in the index.
func (w *worker) recur(ctx context.Context, ds []*delivery) error {
	var next []payload.Task
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
			n, ok, err = payload.NextOccurrence(*d.task, w.s.cfg.MaxDelay)
		}()
		switch {
		case p != nil:
			w.s.internal(d, p)
		case err != nil:
			w.s.recurM.ended.WithLabelValues(endInvalid).Inc()
			w.s.log.Error("recurring task ends: next occurrence not planned", "id", d.task.Name,
				"exec_at", d.task.ExecAt, "err", err)
		case ok:
			next = append(next, n)
		default:
			if _, _, recurs, _ := payload.Series(*d.task); recurs {
				w.s.recurM.ended.WithLabelValues(endDone).Inc()
			}
		}
	}
	if len(next) == 0 {
		return nil
	}
	err := w.s.stage.Do(ctx, "put_next", w.s.policy, func(ctx context.Context) error {
		return w.s.store.Put(ctx, next)
	})
	if err != nil {
		return fmt.Errorf("scanner: store %d next occurrences: %w", len(next), err)
	}
	entries := make([]zset.Entry, len(next))
	for i, t := range next {
		entries[i] = zset.Entry{ID: t.ID, ExecAt: t.ExecAt}
	}
	err = w.s.stage.Do(ctx, "add_next", w.s.policy, func(ctx context.Context) error {
		err := w.s.ix.Add(ctx, time.Now(), entries)
		if errors.Is(err, zset.ErrBadEntry) {
			// An entry Add refuses can never be indexed (payload.Decode
			// admits none such): log it, index the others (Add did).
			w.s.log.Error("next occurrence refused by the index", "err", err)
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("scanner: index %d next occurrences: %w", len(next), err)
	}
	if err := w.track(ctx, next); err != nil {
		return err
	}
	w.s.recurM.planned.Add(float64(len(next)))
	return nil
}

// track records each next occurrence as its name's current due time (the
// id row's d:a, payload.IDWrite.At), then reads the id rows back and marks
// the occurrences of names cancelled by id alone. Ingest's cancel by id
// writes its d:x before it reads d:a; here d:a is written before d:x is
// read; so one of the two sees the other and the occurrence is marked
// whichever comes first. Doing it twice is harmless.
func (w *worker) track(ctx context.Context, next []payload.Task) error {
	writes := make([]payload.IDWrite, len(next))
	keys := make([]uint64, len(next))
	for i, t := range next {
		writes[i] = payload.IDWrite{ID: t.ID, Name: t.Name, At: t.ExecAt}
		keys[i] = t.ID
	}
	err := w.s.stage.Do(ctx, "put_ids", w.s.policy, func(ctx context.Context) error {
		return w.s.store.PutIDs(ctx, writes)
	})
	if err != nil {
		return fmt.Errorf("scanner: record %d next occurrences in their id rows: %w", len(next), err)
	}
	var states []payload.IDState
	err = w.s.stage.Do(ctx, "get_ids", w.s.policy, func(ctx context.Context) (err error) {
		states, err = w.s.store.GetIDs(ctx, keys)
		if err == nil && len(states) != len(keys) {
			err = fmt.Errorf("%w: %d id rows for %d ids", ErrStore, len(states), len(keys))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("scanner: read %d id rows: %w", len(keys), err)
	}
	var markers []payload.Task
	for i, st := range states {
		if st.Cancelled {
			t := next[i]
			markers = append(markers, payload.Task{ID: t.ID, Name: t.Name, ExecAt: t.ExecAt, Cancel: true})
		}
	}
	if len(markers) == 0 {
		return nil
	}
	err = w.s.stage.Do(ctx, "cancel_next", w.s.policy, func(ctx context.Context) error {
		return w.s.store.Put(ctx, markers)
	})
	if err != nil {
		return fmt.Errorf("scanner: cancel %d next occurrences: %w", len(markers), err)
	}
	return nil
}

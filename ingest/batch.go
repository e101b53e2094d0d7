package ingest

import (
	"context"
	"errors"
	"fmt"
	"github.com/delayq/delayq/internal/tracing"
	"time"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/taskstate"
	"github.com/delayq/delayq/zset"
)

// outcome counts what a handled batch did, for metrics once it is safe.
type outcome struct {
	accepted, cancels, reschedules int
	failed                         map[string]int // by reason
}

// refusal is why a store refused one task for good.
type refusal struct {
	reason string // ReasonStore or ReasonIndex
	text   string // the delay-error header
}

// handle stores one batch: decode, Store.Put, Index.Add, failed-topic
// routing. Each message meets its own fate: one that breaks the contract, or
// that a store refuses for good, goes to the failed topic alone; the others
// are stored. An outage of a store or of the failed topic stalls handle,
// which retries until the dependency answers. It returns nil when every
// message is stored in both stores or written to the failed topic, so the
// batch may be committed, and an error only when ctx ended first: the batch
// must not be committed and may be handled again (every write is
// idempotent).
func (in *Ingester) handle(ctx context.Context, msgs []payload.Message, now time.Time) error {
	out := outcome{failed: map[string]int{}}
	sp := in.spans(msgs)
	tasks := make([]payload.Task, 0, len(msgs))
	src := make([]int, 0, len(msgs)) // src[i] = index in msgs of tasks[i]
	recorded := make([]time.Time, 0, len(msgs))
	var failed []payload.Message
	for i, m := range msgs {
		t, err := payload.Decode(m, now, in.cfg.Decode)
		if err != nil {
			in.log.Debug("message rejected", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
			failed = append(failed, in.failedMessage(m, err.Error()))
			out.failed[ReasonContract]++
			sp.fate(i, "", ReasonContract)
			continue
		}
		sp.fate(i, t.Name, "stored")
		tasks = append(tasks, t)
		src = append(src, i)
		recorded = append(recorded, m.Time)
	}

	failedOf := func(i int, reason string) payload.Message { return in.failedMessage(msgs[src[i]], reason) }
	held := len(msgs) > 0 && msgs[0].Topic == in.cfg.Input // a batch is one lane's
	refused, err := in.store(ctx, tasks, recorded, held, failedOf)
	if err != nil {
		return fmt.Errorf("ingest: store %d tasks: %w", len(tasks), err)
	}
	for i, t := range tasks {
		if r, ok := refused[i]; ok {
			m := msgs[src[i]]
			in.log.Warn("task refused for good, sending it to the failed topic", "topic", m.Topic,
				"partition", m.Partition, "offset", m.Offset, "id", t.Name, "reason", r.text)
			failed = append(failed, in.failedMessage(m, r.text))
			out.failed[r.reason]++
			sp.fate(src[i], t.Name, r.reason)
			continue
		}
		switch {
		case t.Cancel || t.Control == payload.ControlCancelID:
			out.cancels++
		case t.Control == payload.ControlReschedule:
			out.reschedules++
		default: // a submit or a replace
			out.accepted++
		}
	}

	if len(failed) > 0 {
		if err := in.writeFailed(ctx, failed); err != nil {
			return fmt.Errorf("ingest: write %d messages to %s: %w", len(failed), in.cfg.Failed, err)
		}
	}

	in.m.accepted.Add(float64(out.accepted))
	in.m.cancels.Add(float64(out.cancels))
	in.m.reschedules.Add(float64(out.reschedules))
	for reason, n := range out.failed {
		in.m.failed.WithLabelValues(reason).Add(float64(n))
	}
	sp.end()
	return nil
}

// batchSpans collects what handle did with each message of a batch, for
// the tracer's span per message; with no tracer it records nothing.
type batchSpans struct {
	tr       *tracing.Tracer
	msgs     []payload.Message
	ids      []string
	outcomes []string
	start    time.Time
}

func (in *Ingester) spans(msgs []payload.Message) batchSpans {
	if in.cfg.Tracer == nil {
		return batchSpans{}
	}
	return batchSpans{tr: in.cfg.Tracer, msgs: msgs, ids: make([]string, len(msgs)), outcomes: make([]string, len(msgs)), start: time.Now()}
}

// fate records message i's id and outcome ("stored" or the failed topic's
// reason).
func (b batchSpans) fate(i int, id, outcome string) {
	if b.tr != nil {
		b.ids[i], b.outcomes[i] = id, outcome
	}
}

// end records the batch's spans once every message is stored or failed.
func (b batchSpans) end() {
	if b.tr == nil {
		return
	}
	now := time.Now()
	for i, m := range b.msgs {
		b.tr.Ingested(m, b.ids[i], b.outcomes[i], b.start, now)
	}
}

// store puts tasks in the Store, runs the id-row protocol for them
// (lifecycle.go), then indexes the submits that stay at their own due
// time and the moved ones, in taskstate's order. It returns the tasks
// refused for good, by index in tasks, or an error when ctx ended first.
// recorded[i] is the record timestamp of tasks[i]; failedOf(i, reason) is
// its failed-topic message (for the plan's check rows); held: the batch is
// of Input, whose watermarks hold deliveries back (resolve).
func (in *Ingester) store(ctx context.Context, tasks []payload.Task, recorded []time.Time, held bool,
	failedOf func(i int, reason string) payload.Message) (map[int]refusal, error) {
	refused := map[int]refusal{}
	rows := make([]payload.Task, 0, len(tasks))
	rowIdx := make([]int, 0, len(tasks)) // rowIdx[j] = index in tasks of rows[j]
	for i, t := range tasks {
		if t.Control == payload.ControlNone || t.Control == payload.ControlReplace {
			rows = append(rows, row(t, recorded[i]))
			rowIdx = append(rowIdx, i)
		}
	}
	err := in.narrow(ctx, opPut, len(rows), storeRefused,
		func(ctx context.Context, lo, hi int) error { return in.st.Put(ctx, rows[lo:hi]) },
		func(j int, err error) { refused[rowIdx[j]] = refusal{ReasonStore, "store: " + err.Error()} })
	if err != nil {
		return nil, fmt.Errorf("put: %w", err)
	}
	p, moved, read, err := in.resolve(ctx, tasks, recorded, held, refused)
	if err != nil {
		return nil, err
	}
	if len(p.Copies)+len(p.Checks) > 0 {
		cp, origin := copies(p, tasks, moved), make([]int, 0, len(p.Copies)+len(p.Checks))
		for _, c := range p.Copies {
			origin = append(origin, c.Origin)
		}
		for _, c := range p.Checks {
			cp = append(cp, in.checkRow(c, tasks[c.Op], failedOf))
			origin = append(origin, c.Op)
		}
		err := in.narrow(ctx, opPut, len(cp), storeRefused,
			func(ctx context.Context, lo, hi int) error { return in.st.Put(ctx, cp[lo:hi]) },
			func(j int, err error) { refused[origin[j]] = refusal{ReasonStore, "store: " + err.Error()} })
		if err != nil {
			return nil, fmt.Errorf("put moved: %w", err)
		}
	}
	if err := in.index(ctx, tasks, recorded, p, refused); err != nil {
		return nil, err
	}
	if err := in.finish(ctx, p); err != nil {
		return nil, err
	}
	if err := in.forget(ctx, tasks, refused, p, read); err != nil {
		return nil, err
	}
	return refused, nil
}

// forget removes from the index the entries of the rows the batch marked
// cancelled: its cancels by id and due time (marked in step 1) and the
// plan's markers (moves, cancels by id, replaces; step 7). It runs last,
// after every marker is stored, so a crash before it is completed by
// handling the batch again, and an entry removed is one the scanner would
// have dropped: the backlog stops counting it now, not when it falls due.
//
// A cancel by id and due time handled before its task (another partition,
// an earlier batch) finds nothing to remove; it flagged the id (resolve)
// after storing its marker, so a submit of the id that reads the flag
// (read: its id row was read back) reads its task row here, after
// indexing it, and forgets its own entry when the row carries the
// marker. The one case left: a cancel that stores its marker and flag
// after the submit read the flag and forgets before the submit indexes
// (both batches in flight in that window, milliseconds); that entry stays
// counted until it falls due and the scanner drops it.
func (in *Ingester) forget(ctx context.Context, tasks []payload.Task, refused map[int]refusal,
	p *taskstate.Plan, read map[uint64]bool) error {
	policy := retry.Policy{Backoff: in.backoff, CallTimeout: in.cfg.CallTimeout}
	var entries []zset.Entry
	var check []payload.Ref // indexed submits of flagged ids
	for i, t := range tasks {
		_, no := refused[i]
		switch {
		case no:
		case t.Cancel && t.Control == payload.ControlNone:
			entries = append(entries, zset.Entry{ID: t.ID, ExecAt: t.ExecAt})
		case t.Control == payload.ControlNone && !p.Skip[i] && read[t.ID]:
			check = append(check, payload.Ref{ID: t.ID, ExecAt: t.ExecAt})
		}
	}
	if len(check) > 0 {
		var rows []*payload.Task
		if err := in.stage.Do(ctx, opGet, policy, func(ctx context.Context) (err error) {
			rows, err = in.st.Get(ctx, check)
			return err
		}); err != nil {
			return fmt.Errorf("get %d task rows of flagged ids: %w", len(check), err)
		}
		for j, r := range rows {
			if r != nil && r.Cancel {
				entries = append(entries, zset.Entry{ID: check[j].ID, ExecAt: check[j].ExecAt})
			}
		}
	}
	for _, m := range p.Markers {
		entries = append(entries, zset.Entry{ID: m.ID, ExecAt: m.At})
	}
	if len(entries) == 0 {
		return nil
	}
	var gone int64
	if err := in.stage.Do(ctx, opForget, policy, func(ctx context.Context) error {
		n, err := in.ix.Forget(ctx, time.Now(), entries)
		gone += n // a retried call removes only what the failed one left
		return err
	}); err != nil {
		return fmt.Errorf("forget %d cancelled entries: %w", len(entries), err)
	}
	in.m.cancelled.Add(float64(gone))
	return nil
}

// index adds the entries of the submits and replaces that stay at their
// own due time and of the plan's copies, unless refused.
func (in *Ingester) index(ctx context.Context, tasks []payload.Task, recorded []time.Time, p *taskstate.Plan, refused map[int]refusal) error {
	entries := make([]zset.Entry, 0, len(tasks)+len(p.Copies))
	idx := make([]int, 0, cap(entries)) // idx[j] = index in tasks of entries[j]
	for i, t := range tasks {
		_, no := refused[i]
		if t = row(t, recorded[i]); !no && !t.Cancel && t.Control == payload.ControlNone && !p.Skip[i] {
			entries = append(entries, zset.Entry{ID: t.ID, ExecAt: t.ExecAt})
			idx = append(idx, i)
		}
	}
	for _, c := range p.Copies {
		if _, ok := refused[c.Origin]; !ok {
			entries = append(entries, zset.Entry{ID: c.ID, ExecAt: c.To})
			idx = append(idx, c.Origin)
		}
	}
	for _, c := range p.Checks {
		if _, ok := refused[c.Op]; !ok {
			entries = append(entries, zset.Entry{ID: c.ID, ExecAt: c.At})
			idx = append(idx, c.Op)
		}
	}
	err := in.narrow(ctx, opAdd, len(entries), indexRefused,
		func(ctx context.Context, lo, hi int) error {
			// A fresh now per attempt: an entry whose segment ended while we
			// stalled must go to a segment that is still scanned.
			return in.ix.Add(ctx, time.Now(), entries[lo:hi])
		},
		func(j int, err error) { refused[idx[j]] = refusal{ReasonIndex, "index: " + err.Error()} })
	if err != nil {
		return fmt.Errorf("add: %w", err)
	}
	return nil
}

// storeRefused and indexRefused classify the errors no retry can cure (see
// Store and Index); every other error is an outage.
func storeRefused(err error) bool { return errors.Is(err, payload.ErrContract) }
func indexRefused(err error) bool { return errors.Is(err, zset.ErrBadEntry) }

// narrow calls fn on the items [0, n) through the stage, which retries an
// outage until it ends. A call that fails for good (permanent) is narrowed
// down by halves to the items that cause it, and each of those is passed to
// refuse: one bad item costs its neighbours about 2·log2(n) extra calls,
// never their fate. It returns an error only when ctx ended first.
func (in *Ingester) narrow(ctx context.Context, op string, n int, permanent func(error) bool,
	fn func(ctx context.Context, lo, hi int) error, refuse func(i int, err error)) error {
	p := retry.Policy{Backoff: in.backoff, CallTimeout: in.cfg.CallTimeout, Permanent: func(err error) bool { return permanent(err) || fenced(err) }}
	var split func(lo, hi int) error
	split = func(lo, hi int) error {
		if lo >= hi {
			return nil
		}
		err := in.stage.Do(ctx, op, p, func(ctx context.Context) error { return fn(ctx, lo, hi) })
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil || !permanent(err):
			return err
		case hi-lo == 1:
			refuse(lo, err)
			return nil
		}
		mid := lo + (hi-lo)/2
		if err := split(lo, mid); err != nil {
			return err
		}
		return split(mid, hi)
	}
	return split(0, n)
}

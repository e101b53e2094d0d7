package ingest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/internal/watermark"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/taskstate"
)

// Operations on the id rows, values of the op label of
// delayq_stage_retries_total{stage="ingest"}.
const (
	opPutIDs  = "put_ids" // Store.PutIDs (HBase)
	opGetIDs  = "get_ids" // Store.GetIDs (HBase)
	opGet     = "get"     // Store.Get of a task row to move (HBase)
	opFlag    = "flag"    // Index.FlagOps (Redis)
	opFlagged = "flagged" // Index.Flagged (Redis)
)

// defaultRetention is Config.Retention's default, hbase.DefaultRetention.
const defaultRetention = 7 * 24 * time.Hour

// opFlagTTL is how long an op flag is kept: the longest delay plus the
// retention of the id row cells it guards. It is also how long a cancel
// by id alone blocks its id after its record time
// (taskstate.Config.CancelBlock). The sum saturates: with a
// maximum delay near the largest Duration it would wrap to a negative TTL,
// which Redis takes as none (zset.OpFlags.FlagOps caps what it is given).
func opFlagTTL(maxDelay, retention time.Duration) time.Duration {
	ttl := cmp.Or(maxDelay, payload.DefaultMaxDelay) + cmp.Or(retention, defaultRetention)
	if ttl < 0 {
		return math.MaxInt64
	}
	return ttl
}

// row returns the task row a message writes: a submit's (and a cancel
// by id and due time's marker) under its ID, a replace's under its
// VersionID (taskstate's doc, "Replace").
func row(t payload.Task, recorded time.Time) payload.Task {
	if t.Control == payload.ControlReplace {
		t.ID, t.Control = taskstate.VersionID(t.ID, recorded.UnixMilli()), payload.ControlNone
	}
	return t
}

// ops returns the batch's tasks as the rules see them.
func ops(tasks []payload.Task, recorded []time.Time) []taskstate.Op {
	out := make([]taskstate.Op, len(tasks))
	for i, t := range tasks {
		o := taskstate.Op{ID: t.ID, Name: t.Name, At: t.ExecAt, Recorded: recorded[i].UnixMilli()}
		switch {
		case t.Cancel:
			o.Kind = taskstate.CancelAt
		case t.Control == payload.ControlCancelID:
			o.Kind = taskstate.CancelID
		case t.Control == payload.ControlReschedule:
			o.Kind = taskstate.Reschedule
		case t.Control == payload.ControlReplace:
			o.Kind = taskstate.Replace
		}
		out[i] = o
	}
	return out
}

// rules returns taskstate's parameters for a batch; held: the batch is of
// Input. A reschedule of such a batch read after its task's due time
// still moves the task when it was recorded the scanner's hold lead before
// that time (taskstate.Config.HoldLead), provided ingest publishes the
// watermarks that make the scanner wait for it (Marks). delayd's scanner
// holds with watermark's defaults, which this takes.
func (in *Ingester) rules(held bool) taskstate.Config {
	cfg := taskstate.Config{RescheduleGrace: in.cfg.RescheduleGrace,
		CancelBlock: opFlagTTL(in.cfg.Decode.MaxDelay, in.cfg.Retention)}
	if held && in.cfg.Marks != nil {
		cfg.HoldLead, cfg.MaxHold = watermark.DefaultLead, watermark.DefaultMaxHold
	}
	return cfg
}

// resolve runs steps 1 to 3 of the id-row protocol (taskstate's doc) for
// a batch whose task rows are stored: it flags the ops' ids, writes every
// message's cell to its id row, reads the rows back, and has taskstate
// decide. It returns an error only when ctx ended first.
//
// It also flags the ids of the batch's cancels by id and due time (their
// markers are stored already), and returns the ids whose id row it read
// back (an op, or a flag): ingest checks the task rows of those submits
// after indexing them (see forget), so that a cancel handled before its
// task still takes the task's entry out of the backlog.
func (in *Ingester) resolve(ctx context.Context, tasks []payload.Task, recorded []time.Time, held bool,
	refused map[int]refusal) (*taskstate.Plan, map[payload.Ref]*payload.Task, map[uint64]bool, error) {
	b := taskstate.Begin(ops(tasks, recorded), func(i int) bool { _, ok := refused[i]; return ok })
	policy := retry.Policy{Backoff: in.backoff, CallTimeout: in.cfg.CallTimeout, Permanent: fenced}
	flag := b.OpIDs()
	for i, t := range tasks {
		if _, no := refused[i]; !no && t.Cancel && t.Control == payload.ControlNone {
			flag = append(flag, t.ID)
		}
	}
	if len(flag) > 0 {
		ttl := opFlagTTL(in.cfg.Decode.MaxDelay, in.cfg.Retention)
		if err := in.stage.Do(ctx, opFlag, policy, func(ctx context.Context) error {
			return in.ix.FlagOps(ctx, flag, ttl)
		}); err != nil {
			return nil, nil, nil, fmt.Errorf("flag ops: %w", err)
		}
	}
	if len(b.IDs) == 0 {
		return &taskstate.Plan{}, nil, nil, nil
	}
	opIDs := b.OpIDs()
	if err := in.stage.Do(ctx, opPutIDs, policy, func(ctx context.Context) error {
		return in.st.PutIDs(ctx, b.Writes)
	}); err != nil {
		return nil, nil, nil, fmt.Errorf("put id rows: %w", err)
	}
	var flagged []bool
	if len(opIDs) < len(b.IDs) {
		if err := in.stage.Do(ctx, opFlagged, policy, func(ctx context.Context) (err error) {
			flagged, err = in.ix.Flagged(ctx, b.IDs)
			return err
		}); err != nil {
			return nil, nil, nil, fmt.Errorf("read op flags: %w", err)
		}
	}
	reads := b.Reads(flagged)
	read := map[uint64]bool{}
	for k, id := range b.IDs {
		if reads[k] {
			read[id] = true
		}
	}
	states, err := in.readStates(ctx, policy, b.IDs, reads)
	if err != nil {
		return nil, nil, nil, err
	}
	p := taskstate.Decide(b, states, time.Now().UnixMilli(), in.rules(held))
	rows, err := in.settle(ctx, policy, p)
	if err != nil {
		return nil, nil, nil, err
	}
	for i, text := range p.Refused {
		refused[i] = refusal{ReasonLifecycle, text}
	}
	return p, rows, read, nil
}

// readStates reads the id rows of ids[k] where read[k]; the others are
// zero.
func (in *Ingester) readStates(ctx context.Context, policy retry.Policy, ids []uint64, read []bool) ([]taskstate.State, error) {
	var keys []uint64
	for k, id := range ids {
		if read[k] {
			keys = append(keys, id)
		}
	}
	states := make([]taskstate.State, len(ids))
	if len(keys) == 0 {
		return states, nil
	}
	var got []payload.IDState
	if err := in.stage.Do(ctx, opGetIDs, policy, func(ctx context.Context) (err error) {
		got, err = in.st.GetIDs(ctx, keys)
		return err
	}); err != nil {
		return nil, fmt.Errorf("get id rows: %w", err)
	}
	for k := range ids {
		if read[k] {
			states[k], got = got[0], got[1:]
		}
	}
	return states, nil
}

// settle reads the task rows of the plan's moves whose payload is not in
// the batch, at their current due time and at their target (a move cut
// short by a crash has written it already), and settles the plan. It
// returns the live rows read, the payloads of the plan's copies.
func (in *Ingester) settle(ctx context.Context, policy retry.Policy, p *taskstate.Plan) (map[payload.Ref]*payload.Task, error) {
	if len(p.Moves) == 0 {
		return nil, nil
	}
	refs := make([]payload.Ref, 0, 2*len(p.Moves))
	for _, m := range p.Moves {
		refs = append(refs, payload.Ref{ID: m.Row, ExecAt: m.From}, payload.Ref{ID: m.Row, ExecAt: m.To})
	}
	var got []*payload.Task
	if err := in.stage.Do(ctx, opGet, policy, func(ctx context.Context) (err error) {
		got, err = in.st.Get(ctx, refs)
		return err
	}); err != nil {
		return nil, fmt.Errorf("get %d task rows to move: %w", len(refs), err)
	}
	live := map[payload.Ref]*payload.Task{}
	rows := make([]taskstate.Row, len(got))
	for j, t := range got {
		switch {
		case t == nil:
			rows[j] = taskstate.NoRow
		case t.Cancel:
			rows[j] = taskstate.Marked
		default:
			rows[j] = taskstate.Live
			live[refs[j]] = t
		}
	}
	p.Settle(rows)
	return live, nil
}

// finish writes what a plan leaves after the index: the cancel markers,
// then the id rows' current due times.
func (in *Ingester) finish(ctx context.Context, p *taskstate.Plan) error {
	policy := retry.Policy{Backoff: in.backoff, CallTimeout: in.cfg.CallTimeout, Permanent: fenced}
	if len(p.Markers) > 0 {
		markers := make([]payload.Task, len(p.Markers))
		for j, m := range p.Markers {
			markers[j] = payload.Task{ID: m.ID, Name: m.Name, ExecAt: m.At, Cancel: true}
		}
		if err := in.stage.Do(ctx, opPut, policy, func(ctx context.Context) error {
			return in.st.Put(ctx, markers)
		}); err != nil {
			return fmt.Errorf("put %d cancel markers: %w", len(markers), err)
		}
	}
	if len(p.Ats) > 0 {
		if err := in.stage.Do(ctx, opPutIDs, policy, func(ctx context.Context) error {
			return in.st.PutIDs(ctx, p.Ats)
		}); err != nil {
			return fmt.Errorf("put %d id rows: %w", len(p.Ats), err)
		}
	}
	return nil
}

// checkRow is the row of check c of reschedule t: its failed-topic
// message, with the reason it fails for if no task marks the row first
// (payload.IsCheck).
func (in *Ingester) checkRow(c taskstate.Check, t payload.Task, failedOf func(int, string) payload.Message) payload.Task {
	m := failedOf(c.Op, taskstate.UnknownReason(t.Name, in.cfg.RescheduleGrace, 0))
	return payload.Task{ID: c.ID, Name: t.Name, ExecAt: c.At, Key: m.Key, Value: m.Value, Headers: m.Headers}
}

// copies returns the task rows of the plan's copies: the batch's task, or
// the stored row, at its new due time (in the row of Copy.ID).
func copies(p *taskstate.Plan, tasks []payload.Task, rows map[payload.Ref]*payload.Task) []payload.Task {
	out := make([]payload.Task, len(p.Copies))
	for j, c := range p.Copies {
		var t payload.Task
		if c.Src >= 0 {
			t = tasks[c.Src]
		} else {
			t = *rows[payload.Ref{ID: c.ID, ExecAt: c.Row}]
		}
		t.ID, t.ExecAt, t.Cancel, t.Control, t.PastDue = c.ID, c.To, false, payload.ControlNone, false
		out[j] = t
	}
	return out
}

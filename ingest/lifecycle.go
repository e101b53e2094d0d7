package ingest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// Operations on the id rows, values of the op label of
// delayq_stage_retries_total{stage="ingest"}.
const (
	opPutIDs  = "put_ids" // IDStore.PutIDs (HBase)
	opGetIDs  = "get_ids" // IDStore.GetIDs (HBase)
	opGet     = "get"     // Store.Get of a task row to move (HBase)
	opFlag    = "flag"    // OpFlags.FlagOps (Redis)
	opFlagged = "flagged" // OpFlags.Flagged (Redis)
)

// IDStore is the id-row part of the payload store (payload.IDStore) and the
// task-row read a reschedule needs. When the Store passed to New implements
// it, ingest keeps an id row per task name and accepts cancel by id alone
// and reschedule; otherwise it refuses those ops (ReasonLifecycle).
type IDStore interface {
	payload.IDStore
	Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error)
}

// OpFlags is an optional part of the Index (zset.Index implements it):
// a flag per id that has had an op by id. With it, a submit reads its id
// row only when its id is flagged (a Redis EXISTS instead of an HBase Get
// per submit); without it, every submit reads its id row back.
type OpFlags interface {
	FlagOps(ctx context.Context, ids []uint64, ttl time.Duration) error
	Flagged(ctx context.Context, ids []uint64) ([]bool, error)
}

// defaultRetention is Config.Retention's default, hbase.DefaultRetention.
const defaultRetention = 7 * 24 * time.Hour

// opFlagTTL is how long an op flag is kept: the longest delay plus the
// retention of the id row cells it guards. The sum saturates: with a
// maximum delay near the largest Duration it would wrap to a negative TTL,
// which Redis takes as none (zset.FlagOps caps what it is given).
func opFlagTTL(maxDelay, retention time.Duration) time.Duration {
	ttl := cmp.Or(maxDelay, payload.DefaultMaxDelay) + cmp.Or(retention, defaultRetention)
	if ttl < 0 {
		return math.MaxInt64
	}
	return ttl
}

// plan is what the id rows of a batch ask for beyond the plain path. It is
// carried out in this order, so that a crash anywhere leaves a state that
// handling the batch again completes: copies (task rows at their new due
// time), then the index (entries), then markers (cancel markers on the
// rows a move leaves or a cancel by id names), then the id rows' new
// current due time (ats).
type plan struct {
	copies  []payload.Task
	entries []zset.Entry
	origin  []int        // origin[j] = index in tasks of entries[j]
	skip    map[int]bool // submits not indexed at their own due time
	markers []payload.Task
	ats     []payload.IDWrite
	moved   int // reschedules accepted
}

// resolve runs the id-row protocol for a batch whose task rows are stored:
// it writes every op's cell to its id row, reads the rows back and decides
// each op (see the package doc, "Ops by id"). Ops it refuses for good are
// added to refused. It returns an error only when ctx ended first.
func (in *Ingester) resolve(ctx context.Context, ids IDStore, tasks []payload.Task, recorded []time.Time,
	refused map[int]refusal) (*plan, error) {
	p := &plan{skip: map[int]bool{}}
	byID := map[uint64][]int{} // task indexes per id, in batch order
	var order []uint64
	for i, t := range tasks {
		if _, ok := refused[i]; ok || t.Cancel {
			continue // cancels by due time mark their row only
		}
		if _, ok := byID[t.ID]; !ok {
			order = append(order, t.ID)
		}
		byID[t.ID] = append(byID[t.ID], i)
	}
	if len(order) == 0 {
		return p, nil
	}

	// 1. Write: each op's cell, one write per id (later ops of the batch
	// win), before reading anything back. An op flags its id first.
	flags, _ := in.ix.(OpFlags)
	writes := make([]payload.IDWrite, 0, len(order))
	hasOp := make([]bool, len(order))
	var opIDs []uint64
	for k, id := range order {
		w := payload.IDWrite{ID: id}
		for _, i := range byID[id] {
			t := tasks[i]
			w.Name = t.Name
			switch t.Control {
			case payload.ControlNone:
				w.Submitted = t.ExecAt
			case payload.ControlCancelID:
				w.Cancel, hasOp[k] = true, true
			case payload.ControlReschedule:
				w.Moving, hasOp[k] = t.ExecAt, true
			}
		}
		if hasOp[k] {
			opIDs = append(opIDs, id)
		}
		writes = append(writes, w)
	}
	policy := retry.Policy{Backoff: in.backoff, CallTimeout: in.cfg.CallTimeout}
	if flags != nil && len(opIDs) > 0 {
		ttl := opFlagTTL(in.cfg.Decode.MaxDelay, in.cfg.Retention)
		if err := in.stage.Do(ctx, opFlag, policy, func(ctx context.Context) error {
			return flags.FlagOps(ctx, opIDs, ttl)
		}); err != nil {
			return nil, fmt.Errorf("flag ops: %w", err)
		}
	}
	if err := in.stage.Do(ctx, opPutIDs, policy, func(ctx context.Context) error {
		return ids.PutIDs(ctx, writes)
	}); err != nil {
		return nil, fmt.Errorf("put id rows: %w", err)
	}

	// 2. Read back: every id with an op, and the submits' ids that are
	// flagged (all of them without flags).
	read := hasOp
	if flags == nil {
		read = make([]bool, len(order))
		for k := range read {
			read[k] = true
		}
	} else if len(opIDs) < len(order) {
		var flagged []bool
		if err := in.stage.Do(ctx, opFlagged, policy, func(ctx context.Context) error {
			var err error
			flagged, err = flags.Flagged(ctx, order)
			return err
		}); err != nil {
			return nil, fmt.Errorf("read op flags: %w", err)
		}
		for k := range read {
			read[k] = read[k] || flagged[k]
		}
	}
	var readIDs []uint64
	for k, id := range order {
		if read[k] {
			readIDs = append(readIDs, id)
		}
	}
	states := make([]payload.IDState, len(order))
	if len(readIDs) > 0 {
		var got []payload.IDState
		if err := in.stage.Do(ctx, opGetIDs, policy, func(ctx context.Context) error {
			var err error
			got, err = ids.GetIDs(ctx, readIDs)
			return err
		}); err != nil {
			return nil, fmt.Errorf("get id rows: %w", err)
		}
		for k := range order {
			if read[k] {
				states[k], got = got[0], got[1:]
			}
		}
	}

	// 3. Decide. Moves whose payload is not in the batch read it first.
	now := time.Now()
	type move struct {
		id       uint64
		from, to int64
		src      int // index in tasks of a submit carrying the payload; -1: read the row
		ops      []int
	}
	var moves []move
	for k, id := range order {
		st, idx := states[k], byID[id]
		due := st.Due()
		if st.Cancelled {
			for _, i := range idx {
				t := tasks[i]
				switch t.Control {
				case payload.ControlNone:
					p.skip[i] = true
					p.markers = append(p.markers, marker(t.ID, t.Name, t.ExecAt))
				case payload.ControlReschedule:
					refused[i] = refusal{ReasonLifecycle, fmt.Sprintf("%s: delay-id %q is cancelled", payload.OpReschedule, t.Name)}
				}
			}
			name := tasks[idx[0]].Name
			for _, at := range []int64{due, st.Moving} {
				if at > 0 {
					p.markers = append(p.markers, marker(id, name, at))
				}
			}
			continue
		}
		// Not cancelled: submits and reschedules of id. target is where
		// the task goes: the latest reschedule's time unless refused.
		var resched, submits []int
		for _, i := range idx {
			switch tasks[i].Control {
			case payload.ControlReschedule:
				resched = append(resched, i)
			case payload.ControlNone:
				submits = append(submits, i)
			}
		}
		name := tasks[idx[0]].Name
		target := st.Moving
		if len(resched) > 0 {
			switch {
			case due == 0:
				// No task stored: it may still be on its way (another
				// partition, delay-input-slow). A young reschedule waits for
				// it in the id row; an old one names an unknown id.
				for _, i := range resched {
					if age := now.Sub(recorded[i]); age >= in.cfg.RescheduleGrace {
						refused[i] = refusal{ReasonLifecycle, fmt.Sprintf(
							"%s: unknown delay-id %q: no task with this id is stored (a reschedule waits for its task only while under %v old; this one is %v old)",
							payload.OpReschedule, name, in.cfg.RescheduleGrace, age.Round(time.Millisecond))}
					} else {
						p.moved++
					}
				}
				if _, old := refused[resched[len(resched)-1]]; old {
					// Undo the cell, so that a task arriving later stays.
					p.ats = append(p.ats, payload.IDWrite{ID: id, Moving: -1})
				}
			case due <= now.UnixMilli():
				for _, i := range resched {
					refused[i] = refusal{ReasonLifecycle, fmt.Sprintf(
						"%s: delay-id %q was due at %s: delivered or being delivered (a reschedule must arrive before the task is due)",
						payload.OpReschedule, name, payload.FormatTime(due))}
				}
				// Undo the cell, so that a re-read submit does not move a
				// delivered task.
				target = st.At
				p.ats = append(p.ats, payload.IDWrite{ID: id, Moving: cmpOr(st.At, -1)})
			default:
				p.moved += len(resched)
				if target != due && len(submits) == 0 {
					moves = append(moves, move{id: id, from: due, to: target, src: -1, ops: resched})
				}
			}
		}
		for _, i := range submits {
			if target > 0 && target != tasks[i].ExecAt {
				// Its reschedule came first, or this is a re-read: the
				// submit goes to the reschedule's due time.
				p.skip[i] = true
				moves = append(moves, move{id: id, from: tasks[i].ExecAt, to: target, src: i})
			}
		}
	}

	// Read the rows of moves whose payload is not in hand: the row at the
	// current due time and the one at the target (a move cut short by a
	// crash has written it already).
	var refs []payload.Ref
	for _, m := range moves {
		if m.src < 0 {
			refs = append(refs, payload.Ref{ID: m.id, ExecAt: m.from}, payload.Ref{ID: m.id, ExecAt: m.to})
		}
	}
	var rows []*payload.Task
	if len(refs) > 0 {
		if err := in.stage.Do(ctx, opGet, policy, func(ctx context.Context) error {
			var err error
			rows, err = ids.Get(ctx, refs)
			return err
		}); err != nil {
			return nil, fmt.Errorf("get %d task rows to move: %w", len(refs), err)
		}
	}
	for _, m := range moves {
		var t payload.Task
		if m.src >= 0 {
			t = tasks[m.src]
		} else {
			from, to := rows[0], rows[1]
			rows = rows[2:]
			switch {
			case from != nil && !from.Cancel:
				t = *from
			case to != nil && !to.Cancel:
				t = *to // the move was cut short after its copy: finish it
			default:
				why := "is cancelled"
				if from == nil {
					why = "has no stored row at " + payload.FormatTime(m.from)
				}
				for _, i := range m.ops {
					refused[i] = refusal{ReasonLifecycle, fmt.Sprintf("%s: delay-id %q %s", payload.OpReschedule, tasks[i].Name, why)}
					p.moved--
				}
				p.ats = append(p.ats, payload.IDWrite{ID: m.id, Moving: cmpOr(m.from, -1)})
				continue
			}
		}
		c := t
		c.ExecAt, c.Cancel, c.Control = m.to, false, payload.ControlNone
		p.copies = append(p.copies, c)
		p.entries = append(p.entries, zset.Entry{ID: m.id, ExecAt: m.to})
		origin := m.src
		if origin < 0 {
			origin = m.ops[len(m.ops)-1]
		}
		p.origin = append(p.origin, origin)
		p.markers = append(p.markers, marker(m.id, t.Name, m.from))
		p.ats = append(p.ats, payload.IDWrite{ID: m.id, Name: t.Name, At: m.to, Moving: m.to})
	}
	return p, nil
}

// finish writes what a plan leaves after the index: the cancel markers,
// then the id rows' current due times.
func (in *Ingester) finish(ctx context.Context, ids IDStore, p *plan) error {
	policy := retry.Policy{Backoff: in.backoff, CallTimeout: in.cfg.CallTimeout}
	if len(p.markers) > 0 {
		if err := in.stage.Do(ctx, opPut, policy, func(ctx context.Context) error {
			return in.st.Put(ctx, p.markers)
		}); err != nil {
			return fmt.Errorf("put %d cancel markers: %w", len(p.markers), err)
		}
	}
	if len(p.ats) > 0 {
		if err := in.stage.Do(ctx, opPutIDs, policy, func(ctx context.Context) error {
			return ids.PutIDs(ctx, p.ats)
		}); err != nil {
			return fmt.Errorf("put %d id rows: %w", len(p.ats), err)
		}
	}
	return nil
}

func marker(id uint64, name string, at int64) payload.Task {
	return payload.Task{ID: id, Name: name, ExecAt: at, Cancel: true}
}

// cmpOr returns v, or alt when v is 0.
func cmpOr(v, alt int64) int64 {
	if v != 0 {
		return v
	}
	return alt
}

package taskstate

import (
	"fmt"
	"time"
)

// Kind is what an input message asks for.
type Kind uint8

// Kinds of ops.
const (
	// Submit stores a task due at Op.At.
	Submit Kind = iota
	// CancelAt cancels by id and due time: it marks the row at Op.At, and
	// takes no part in the id-row protocol.
	CancelAt
	// CancelID cancels by id alone: whatever task the id names, now and
	// for the op lifetime after (see the package doc).
	CancelID
	// Reschedule moves the task the id names to Op.At.
	Reschedule
	// Replace stores a new task under the id, due at Op.At, in its own
	// row (VersionID), and supersedes the task the id names.
	Replace
)

// Op is one valid message of a batch, as the rules see it.
type Op struct {
	ID       uint64
	Name     string // delay-id, for refusals
	Kind     Kind
	At       int64 // due time, unix ms: Submit, CancelAt; the new one for Reschedule, Replace; 0 for CancelID
	Recorded int64 // the message's record timestamp, unix ms
}

// Config holds the rules' parameters.
type Config struct {
	// RescheduleGrace is how long a reschedule of an id with no stored
	// task waits for the task (ingest.Config.RescheduleGrace).
	RescheduleGrace time.Duration
	// CancelBlock is how long a cancel by id alone blocks its id after
	// its record time: --max-delay + --retention, as long as the op flag
	// and the d:x cell that carry it live. 0: for ever (the stores' TTLs
	// end it). It bounds the block exactly (see Blocks) and dates the
	// refusal of a submit that reuses the id (CancelledReason).
	CancelBlock time.Duration
	// HoldLead and MaxHold are the scanner's delivery hold
	// (internal/watermark's Lead and MaxHold): no task is delivered more
	// than HoldLead past what ingest has stored of delay-input, unless its
	// partition is MaxHold or more behind. So a reschedule recorded
	// HoldLead or more before its task's due time reaches the task before
	// it is delivered, even when ingest reads it after that time (queued
	// behind a stall), as a cancel does: it moves the task (see late).
	// HoldLead 0: no hold (a batch of delay-input-slow, whose watermarks
	// the scanner does not wait for, or no watermarks published); a
	// reschedule read after the due time is refused.
	HoldLead time.Duration
	MaxHold  time.Duration
}

// Batch is the ops of a batch grouped by id: the id-row cells step 1
// writes and the ids step 2 reads back. Build it with Begin.
type Batch struct {
	ops []Op
	// IDs are the distinct ids of the batch's submits and ops by id, in
	// batch order; Writes, HasOp are aligned with them.
	IDs []uint64
	// Writes is one id-row write per id: each message's cell, later
	// messages of the batch winning.
	Writes []Write
	// HasOp: the id has an op by id in the batch (flag it, read it back).
	HasOp []bool
	byID  [][]int // op indexes per id, in batch order
}

// Begin groups ops by id. skip(i) leaves ops[i] out (refused already).
func Begin(ops []Op, skip func(i int) bool) *Batch {
	b := &Batch{ops: ops}
	pos := map[uint64]int{}
	for i, o := range ops {
		if o.Kind == CancelAt || skip(i) {
			continue // cancels by due time mark their row only
		}
		k, ok := pos[o.ID]
		if !ok {
			k = len(b.IDs)
			pos[o.ID] = k
			b.IDs = append(b.IDs, o.ID)
			b.Writes = append(b.Writes, Write{ID: o.ID})
			b.HasOp = append(b.HasOp, false)
			b.byID = append(b.byID, nil)
		}
		b.byID[k] = append(b.byID[k], i)
		w := &b.Writes[k]
		w.Name = o.Name
		switch o.Kind {
		case Submit:
			w.Submitted, w.SubmitRecorded = o.At, o.Recorded
		case CancelID:
			w.Cancel, w.CancelRecorded, b.HasOp[k] = true, o.Recorded, true
		case Reschedule:
			w.Moving, w.MoveRecorded, b.HasOp[k] = o.At, o.Recorded, true
		case Replace:
			w.Replacing, w.ReplaceRecorded, b.HasOp[k] = o.At, o.Recorded, true
		}
	}
	return b
}

// OpIDs returns the ids that have an op by id: those to flag first.
func (b *Batch) OpIDs() []uint64 {
	var ids []uint64
	for k, id := range b.IDs {
		if b.HasOp[k] {
			ids = append(ids, id)
		}
	}
	return ids
}

// Reads returns which ids to read back: those with an op, and those whose
// op flag is set (flagged aligned with IDs; nil when every id has an op).
func (b *Batch) Reads(flagged []bool) []bool {
	read := make([]bool, len(b.IDs))
	for k := range read {
		read[k] = b.HasOp[k] || (flagged != nil && flagged[k])
	}
	return read
}

// Mark is a row to give the cancel marker: ID is the row's id (the
// task's, or a replace's VersionID).
type Mark struct {
	ID   uint64
	Name string
	At   int64
}

// Move takes the task of an id to a new due time.
type Move struct {
	ID       uint64 // the id row's
	Row      uint64 // the task row's: ID, or a replace's VersionID
	Name     string
	From, To int64
	// Src is the index in the ops of the submit or replace whose task is
	// copied;
	// -1: copy the stored row (at From, or at To when a move cut short by
	// a crash wrote it already): Settle decides.
	Src int
	ops []int // the reschedules that ask for it
	// check is the check row of the reschedule whose cell moves a task
	// of the batch (Src >= 0): marked with the move (checkOf).
	check Mark
}

// Check is a check row to store and index: the reschedule Op, of an id
// with no task yet, waits for its task until At (its record time + the
// grace); the scanner then sends the row, the reschedule's failed-topic
// message, to the failed topic unless a task came and marked it.
type Check struct {
	Op int
	ID uint64 // CheckID
	At int64
}

// CheckSlack is how long after a reschedule's grace its check row is due:
// more than the scanner's hold lead (2 s), so that the scanner delivers
// the check only once ingest has stored every message of delay-input
// appended within the grace (internal/watermark), and with it the task
// that marks the check.
const CheckSlack = 5 * time.Second

// checkOf is the check row of the reschedule of id recorded at rec, or no
// row for rec 0.
func checkOf(id uint64, name string, rec int64, cfg Config) Mark {
	if rec == 0 {
		return Mark{}
	}
	return Mark{CheckID(id, rec), name, rec + (cfg.RescheduleGrace + CheckSlack).Milliseconds()}
}

// Copy is a task row to write: the task of op Src, or else the stored row
// at Row, copied to To and indexed there. ID is the row's id (Move.Row).
type Copy struct {
	ID     uint64
	Src    int
	Row    int64
	To     int64
	Origin int // the op whose refusal a refused copy becomes
}

// Plan is what a batch's id rows ask for beyond the plain path, carried
// out in the order of its fields (see the package doc, "Order").
type Plan struct {
	Copies  []Copy
	Checks  []Check
	Markers []Mark
	Ats     []Write
	// Skip: submits and replaces not indexed at their own due time and
	// row (cancelled, moved, or replaced).
	Skip map[int]bool
	// Refused: ops refused for good, with the delay-error text.
	Refused map[int]string
	// Moves whose task row must be read first (Src -1): read the rows at
	// From and To of each, in order, and pass them to Settle.
	Moves []Move
	moves []Move
}

// Decide decides each op of b from the id rows read back (states aligned
// with b.IDs; a zero State for an id not read) at now (unix ms).
func Decide(b *Batch, states []State, now int64, cfg Config) *Plan {
	p := &Plan{Skip: map[int]bool{}, Refused: map[int]string{}}
	for k, id := range b.IDs {
		st, idx := states[k], b.byID[k]
		var last int64 // the id's latest op in the batch: a re-read decides the same
		for _, i := range idx {
			last = max(last, b.ops[i].Recorded)
		}
		if st.Blocks(last, cfg.CancelBlock) {
			p.cancelled(b.ops, id, st, idx, cfg)
			continue
		}
		p.pending(b.ops, id, st, idx, now, cfg)
	}
	for _, m := range p.moves {
		if m.Src < 0 {
			p.Moves = append(p.Moves, m)
		} else {
			p.move(m, m.Src, 0)
		}
	}
	return p
}

// cancelled: an id cancelled by id alone marks its rows (current due
// time, the reschedule's time) and every submit of the batch, and refuses
// its reschedules. A submit or replace recorded after the cancel reuses
// the id (Reuses): it is refused too, with the block's end; one recorded
// before it is the task the cancel was meant for (the cancel overtook it
// from another partition) and is stored cancelled, silently.
func (p *Plan) cancelled(ops []Op, id uint64, st State, idx []int, cfg Config) {
	for _, i := range idx {
		switch o := ops[i]; o.Kind {
		case Submit:
			p.Skip[i] = true
			p.Markers = append(p.Markers, Mark{o.ID, o.Name, o.At})
			if st.Reuses(o) {
				p.Refused[i] = CancelledReason("submit", o.Name, st.CancelRecorded, st.BlockEnd(cfg.CancelBlock))
			}
		case Reschedule:
			p.Refused[i] = fmt.Sprintf("reschedule: delay-id %q is cancelled", o.Name)
		case Replace:
			p.Skip[i] = true
			p.Markers = append(p.Markers, Mark{o.row(), o.Name, o.At})
			if st.Reuses(o) {
				p.Refused[i] = CancelledReason("replace", o.Name, st.CancelRecorded, st.BlockEnd(cfg.CancelBlock))
			}
		}
	}
	name := ops[idx[0]].Name
	p.supersede(id, name, st)
	if st.ReplaceRecorded > st.Version && st.Replacing > 0 {
		p.Markers = append(p.Markers, Mark{VersionID(id, st.ReplaceRecorded), name, st.Replacing})
	}
}

// pending: submits and reschedules of an id not cancelled. The target is
// where the task goes: the latest reschedule's time unless refused.
func (p *Plan) pending(ops []Op, id uint64, st State, idx []int, now int64, cfg Config) {
	v, idx := p.replaces(ops, id, st, idx, cfg)
	st = v.st
	var resched, submits []int
	for _, i := range idx {
		switch ops[i].Kind {
		case Reschedule:
			resched = append(resched, i)
		case Submit:
			submits = append(submits, i)
		}
	}
	target := st.moving()
	if len(resched) > 0 {
		target = p.reschedule(ops, id, v, resched, len(submits) > 0, now, cfg)
	}
	for _, i := range submits {
		if target > 0 && target != ops[i].At && !stale(st.MoveRecorded, ops[i].Recorded, cfg) {
			// Its reschedule came first, or this is a re-read: the
			// submit goes to the reschedule's due time.
			p.Skip[i] = true
			p.moves = append(p.moves, Move{ID: id, Row: id, Name: ops[i].Name, From: ops[i].At, To: target, Src: i,
				check: checkOf(id, ops[i].Name, st.MoveRecorded, cfg)})
		}
	}
}

// reschedule decides the reschedules of an id and returns the target of
// its submits.
func (p *Plan) reschedule(ops []Op, id uint64, v view, resched []int, submits bool, now int64, cfg Config) int64 {
	st := v.st
	due, name := st.Due(), ops[resched[0]].Name
	if st.At == 0 && due != 0 && stale(ops[resched[len(resched)-1]].Recorded, st.SubmitRecorded, cfg) {
		due = 0 // the stored task came after the grace: not this reschedule's
	}
	switch {
	case due == 0 || st.MoveFailed == ops[resched[len(resched)-1]].Recorded:
		p.unknown(ops, id, resched, now, cfg)
		return 0
	case late(due, earliest(ops, resched), now, cfg):
		for _, i := range resched {
			p.Refused[i] = fmt.Sprintf(
				"reschedule: delay-id %q was due at %s: delivered or being delivered (a reschedule must arrive before the task is due)",
				name, formatTime(due))
		}
		// Undo the cell, so that a re-read submit does not move a
		// delivered task.
		p.Ats = append(p.Ats, Write{ID: id, Moving: or(st.At, -1)})
		return st.At
	}
	if st.Moving != due && !submits {
		if v.src >= 0 {
			p.Skip[v.src] = true // the batch's replace goes to the reschedule's time
		}
		p.moves = append(p.moves, Move{ID: id, Row: v.row, Name: name, From: due, To: st.Moving, Src: v.src, ops: resched})
	}
	return st.Moving
}

// late reports whether the batch's reschedules, the earliest recorded at
// rec (unix ms), come too late for their task due at due, read at now: the
// task is due and may have been delivered. Not when rec is HoldLead or more
// before the due time: the scanner delivers the task only once ingest has
// stored what delay-input held HoldLead before it, this batch among it,
// unless the stall lasted MaxHold (the hold's end: a reschedule read
// MaxHold or more after its record time is late, as after any stall that
// long). Judged by record time, the producer's clock (or the broker's,
// with LogAppendTime), against the hold kept on delayd's.
func late(due, rec, now int64, cfg Config) bool {
	if due > now {
		return false
	}
	held := cfg.HoldLead > 0 && rec > 0 && rec <= due-cfg.HoldLead.Milliseconds() &&
		now-rec < cfg.MaxHold.Milliseconds()
	return !held
}

// earliest returns the earliest record time of ops idx.
func earliest(ops []Op, idx []int) int64 {
	rec := ops[idx[0]].Recorded
	for _, i := range idx[1:] {
		rec = min(rec, ops[i].Recorded)
	}
	return rec
}

// unknown decides reschedules of an id with no task stored (or none
// stored in time, see stale). The task may still be on its way (another
// partition, delay-input-slow): a reschedule younger than the grace waits
// for it in the id row (d:r, d:rr), and a task recorded within the grace
// after it moves itself there when it comes. An older one fails, and its
// cell is marked failed (d:rf), so that no task arriving later moves and a
// re-read of it fails again.
func (p *Plan) unknown(ops []Op, id uint64, resched []int, now int64, cfg Config) {
	for _, i := range resched {
		o := ops[i]
		age := time.Duration(now-o.Recorded) * time.Millisecond
		if age < cfg.RescheduleGrace {
			c := checkOf(id, o.Name, o.Recorded, cfg)
			p.Checks = append(p.Checks, Check{Op: i, ID: c.ID, At: c.At})
			continue
		}
		p.Refused[i] = UnknownReason(o.Name, cfg.RescheduleGrace, age)
		p.Markers = append(p.Markers, checkOf(id, o.Name, o.Recorded, cfg)) // a re-read's check, if it planned one
	}
	last := resched[len(resched)-1]
	if _, old := p.Refused[last]; old {
		p.Ats = append(p.Ats, Write{ID: id, Moving: -1, MoveFailed: ops[last].Recorded})
	}
}

// UnknownReason is the delay-error of a reschedule of name that found no
// task within grace; age is how old it was when decided (0: decided by its
// check row, at the grace's end).
func UnknownReason(name string, grace, age time.Duration) string {
	old := ""
	if age > 0 {
		old = fmt.Sprintf("; this one is %v old", age)
	}
	return fmt.Sprintf(
		"reschedule: unknown delay-id %q: no task with this id was stored within %v after the reschedule (a reschedule waits for its task that long%s)",
		name, grace, old)
}

// stale reports whether a submit recorded at sub came too late for a
// reschedule recorded at res: more than the grace after it. Either 0
// (a row written before the record times were kept) is never stale.
func stale(res, sub int64, cfg Config) bool {
	return res != 0 && sub != 0 && sub-res >= cfg.RescheduleGrace.Milliseconds()
}

// Row is what a stored task row is, as Settle needs it.
type Row uint8

// Rows.
const (
	NoRow  Row = iota // no row at that time
	Live              // a task row without the cancel marker
	Marked            // a row with the cancel marker
)

// Settle completes the plan with the rows read for p.Moves: rows[2j] and
// rows[2j+1] are the rows at From and To of p.Moves[j].
func (p *Plan) Settle(rows []Row) {
	for j, m := range p.Moves {
		from, to := rows[2*j], rows[2*j+1]
		switch {
		case from == Live:
			p.move(m, -1, m.From)
		case to == Live:
			p.move(m, -1, m.To) // the move was cut short after its copy: finish it
		default:
			why := "is cancelled"
			if from == NoRow {
				why = "has no stored row at " + formatTime(m.From)
			}
			for _, i := range m.ops {
				p.Refused[i] = fmt.Sprintf("reschedule: delay-id %q %s", m.Name, why)
			}
			p.Ats = append(p.Ats, Write{ID: m.ID, Moving: or(m.From, -1)})
		}
	}
	p.Moves = nil
}

func (p *Plan) move(m Move, src int, row int64) {
	if m.check.ID != 0 && src >= 0 {
		p.Markers = append(p.Markers, m.check) // its task came: no failure
	}
	origin := src
	if origin < 0 {
		origin = m.ops[len(m.ops)-1]
	}
	p.Copies = append(p.Copies, Copy{ID: m.Row, Src: src, Row: row, To: m.To, Origin: origin})
	p.Markers = append(p.Markers, Mark{m.Row, m.Name, m.From})
	p.Ats = append(p.Ats, Write{ID: m.ID, Name: m.Name, At: m.To, Moving: m.To})
}

func formatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00") // payload.FormatTime
}

// or returns v, or alt when v is 0.
func or(v, alt int64) int64 {
	if v != 0 {
		return v
	}
	return alt
}

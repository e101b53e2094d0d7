package taskstate

import (
	"fmt"
	"time"
)

// State is what the id row of a task name holds: the id → due-time lookup
// that the ops by id need. Every field is zero when the row does not
// exist. payload.IDState is this type.
type State struct {
	// Submitted is the due time of the latest submit of the name (cell
	// d:s), written by ingest beside the task row.
	Submitted int64
	// At is the current due time after a move (cell d:a): a reschedule,
	// or the next occurrence of a recurring task. It beats Submitted.
	At int64
	// Moving is the latest reschedule's new due time (cell d:r). It stays
	// while the reschedule holds: a submit that arrives after its
	// reschedule, or is read again after a crash, moves itself there.
	Moving int64
	// Cancelled: cancelled by id alone (cell d:x). It stays, so that a
	// task arriving later, and every later occurrence, is cancelled too.
	Cancelled bool
	// CancelRecorded is the record timestamp of the latest cancel by id
	// alone (cell d:xr): a replace recorded before it is superseded, one
	// recorded after it refused.
	CancelRecorded int64
	// SubmitRecorded and MoveRecorded are the record timestamps (unix ms)
	// of the messages that wrote Submitted and Moving (cells d:sr, d:rr);
	// 0 in rows written before they existed. They tell a reschedule from
	// a submit that came more than the grace after it (see the package
	// doc, "Unknown ids").
	SubmitRecorded int64
	MoveRecorded   int64
	// MoveFailed is the record timestamp of a reschedule that failed for
	// an unknown id (cell d:rf). While it equals MoveRecorded, the
	// reschedule in Moving is void: a re-read of it fails again and moves
	// no task.
	MoveFailed int64
	// Replacing and ReplaceRecorded are the new due time and the record
	// timestamp of the latest replace of the name (cells d:u, d:ur),
	// written before it is decided, as Moving is.
	Replacing       int64
	ReplaceRecorded int64
	// Version is the record timestamp of the replace whose task row is the
	// name's current one (cell d:v, written with At once the replace is
	// carried out); 0 while the current row is the submit's. Row derives
	// the row's id from it.
	Version int64
}

// Row returns the id of the name's current task row, for the name whose
// id is id: id itself, or the row of the latest replace carried out.
func (s State) Row(id uint64) uint64 {
	if s.Version != 0 {
		return VersionID(id, s.Version)
	}
	return id
}

// replaced returns the record timestamp of the latest replace of the name
// written or carried out, 0 when there is none.
func (s State) replaced() int64 { return max(s.ReplaceRecorded, s.Version) }

// moving returns the reschedule's target, 0 when there is none or it
// failed.
func (s State) moving() int64 {
	if s.MoveFailed != 0 && s.MoveFailed == s.MoveRecorded {
		return 0
	}
	return s.Moving
}

// Blocks reports whether a cancel by id alone blocks the name for a
// message recorded at rec (unix ms): d:x is set and, with a block length,
// its record time d:xr is less than block before rec. Judged by record
// time, not by when ingest reads the message, so that a re-read decides
// the same. A row written before d:xr was kept has no end but the stores'
// TTLs.
func (s State) Blocks(rec int64, block time.Duration) bool {
	end := s.BlockEnd(block)
	return s.Cancelled && (end == 0 || rec < end)
}

// BlockEnd returns when the cancel by id alone of the name stops blocking
// it, unix ms: its record time + block; 0 when unknown (no cancel by id,
// a row without d:xr, or no block length).
func (s State) BlockEnd(block time.Duration) int64 {
	if !s.Cancelled || s.CancelRecorded == 0 || block <= 0 {
		return 0
	}
	return s.CancelRecorded + min(block, maxBlock).Milliseconds()
}

// maxBlock caps a block's length, so that the sum stays an int64 (the op
// flag's TTL saturates as well, zset.MaxFlagTTL).
const maxBlock = 100 * 365 * 24 * time.Hour

// Reuses reports whether op o of a name cancelled by id alone reuses the
// name: a submit recorded after the cancel (d:xr), or a replace not
// recorded before it. Such an op is refused (CancelledReason); a submit
// recorded before the cancel, or at the same millisecond, is the task the
// cancel was meant for and is stored cancelled. A submit of a row written
// before d:xr was kept is never a reuse.
func (s State) Reuses(o Op) bool {
	switch o.Kind {
	case Submit:
		return s.CancelRecorded != 0 && o.Recorded > s.CancelRecorded
	case Replace:
		return s.CancelRecorded <= o.Recorded
	}
	return false
}

// Due returns the task's current due time, 0 when no task of the name is
// stored.
func (s State) Due() int64 {
	if s.At != 0 {
		return s.At
	}
	return s.Submitted
}

// Write sets cells of the id row of ID; a zero field leaves its cell as
// it is, and Moving -1 clears the reschedule cell (reads 0 after).
// payload.IDWrite is this type.
type Write struct {
	ID        uint64
	Name      string // the task name, for error messages (not stored)
	Submitted int64  // d:s
	At        int64  // d:a
	Moving    int64  // d:r
	Cancel    bool   // d:x
	// CancelRecorded (d:xr) goes with Cancel.
	CancelRecorded int64
	// SubmitRecorded and MoveRecorded (d:sr, d:rr) go with Submitted and
	// Moving.
	SubmitRecorded int64
	MoveRecorded   int64
	MoveFailed     int64 // d:rf
	// Replacing and ReplaceRecorded (d:u, d:ur): a replace's cell;
	// Version (d:v): the replace carried out, with At.
	Replacing       int64
	ReplaceRecorded int64
	Version         int64
}

// Apply returns s after w: what every id-row store must read back after
// writing w (payload.Memory is this function over a map).
func (s State) Apply(w Write) State {
	if w.Submitted != 0 {
		s.Submitted = w.Submitted
	}
	if w.At != 0 {
		s.At = w.At
	}
	if w.Moving != 0 {
		s.Moving = max(w.Moving, 0)
	}
	if w.SubmitRecorded != 0 {
		s.SubmitRecorded = w.SubmitRecorded
	}
	if w.MoveRecorded != 0 {
		s.MoveRecorded = w.MoveRecorded
	}
	if w.MoveFailed != 0 {
		s.MoveFailed = w.MoveFailed
	}
	if w.CancelRecorded != 0 {
		s.CancelRecorded = w.CancelRecorded
	}
	if w.Replacing != 0 {
		s.Replacing = w.Replacing
	}
	if w.ReplaceRecorded != 0 {
		s.ReplaceRecorded = w.ReplaceRecorded
	}
	if w.Version != 0 {
		s.Version = w.Version
	}
	s.Cancelled = s.Cancelled || w.Cancel
	return s
}

// CancelledReason is the delay-error of a submit or replace (op) of name
// refused because a cancel by id alone recorded at cancelled (unix ms)
// blocks the name until end (0: unknown). It starts with "id cancelled",
// the reason to filter delay-failed by.
func CancelledReason(op, name string, cancelled, end int64) string {
	at, until := "an unknown time", "--max-delay + --retention after the cancel"
	if cancelled != 0 {
		at = formatTime(cancelled)
	}
	if end != 0 {
		until = fmt.Sprintf("%s (%s)", formatTime(end), until)
	}
	return fmt.Sprintf("id cancelled: %s of delay-id %q refused: the id was cancelled by id alone at %s and a task submitted with it after the cancel is refused until %s",
		op, name, at, until)
}

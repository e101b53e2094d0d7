package payload

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"
)

// IDRowKeyLen is the length of an id row's key.
const IDRowKeyLen = 10

// idRowMark is the byte after the salt of every id row. A task row has the
// high byte of its exec_at there, which is at most 0x7f (exec_at is never
// negative), so id rows sort after every task row of their salt and no
// exec_at range (ScanRange) ever reaches them.
const idRowMark = 0x80

// IDRowKey builds the 10-byte key of the id row of id for a table with salts
// regions: salt | 0x80 | id (8 bytes BE), salt = FNV-1a-64 of bytes 1..9
// modulo salts. It panics unless 1 <= salts <= 256.
func IDRowKey(salts int, id uint64) []byte {
	checkSalts(salts)
	b := make([]byte, IDRowKeyLen)
	b[1] = idRowMark
	binary.BigEndian.PutUint64(b[2:], id)
	b[0] = byte(saltOf(b[1:]) % uint64(salts))
	return b
}

// IDState is what the id row of a task name holds: the id → due-time
// lookup that cancel by id alone and reschedule need. Every field is zero
// when the row does not exist.
type IDState struct {
	// Submitted is the due time of the latest submit of the name (cell
	// d:s), written by ingest beside the task row.
	Submitted int64
	// At is the current due time after a move (cell d:a): a reschedule,
	// or the next occurrence of a recurring task. It beats Submitted.
	At int64
	// Moving is the latest reschedule's new due time (cell d:r). It stays:
	// a submit that arrives after its reschedule, or is read again after
	// a crash, moves itself there.
	Moving int64
	// Cancelled: cancelled by id alone (cell d:x). It stays, so that a
	// task arriving later, and every later occurrence, is cancelled too.
	Cancelled bool
}

// Due returns the task's current due time, 0 when no task of the name is
// stored.
func (s IDState) Due() int64 {
	if s.At != 0 {
		return s.At
	}
	return s.Submitted
}

// IDWrite sets cells of the id row of ID; a zero field leaves its cell as
// it is, and Moving -1 clears the reschedule cell (reads 0 after).
type IDWrite struct {
	ID        uint64
	Name      string // the task name, for error messages (not stored)
	Submitted int64  // d:s
	At        int64  // d:a
	Moving    int64  // d:r
	Cancel    bool   // d:x
}

// IDStore keeps one id row per task name beside the task rows. Memory and
// the HBase store implement it. Each write of a row is atomic and a read
// after it sees it, which is what makes ingest's write-then-read rule
// order-independent (see ingest's doc).
type IDStore interface {
	// PutIDs writes the cells of each write; it is idempotent. Cells
	// expire as task cells do: max(latest time − now, 0) + retention, and
	// a cancel by id alone (no time) keeps for DefaultMaxDelay + retention.
	PutIDs(ctx context.Context, writes []IDWrite) error
	// GetIDs returns the state of each id, in order; zero for no row.
	GetIDs(ctx context.Context, ids []uint64) ([]IDState, error)
}

// Phase is where a task is in its life, as State reports it.
type Phase string

// Phases.
const (
	// PhaseUnknown: no task of the name is stored (never submitted, not
	// arrived yet, or expired past the retention window).
	PhaseUnknown Phase = "unknown"
	// PhasePending: stored and due at TaskState.At, in the future.
	PhasePending Phase = "pending"
	// PhaseCancelled: cancelled, by id alone or by id and due time.
	PhaseCancelled Phase = "cancelled"
	// PhaseDone: its due time has passed: delivered, being delivered, or
	// expired.
	PhaseDone Phase = "delivered-or-expired"
)

// TaskState is the answer of State.
type TaskState struct {
	Phase Phase
	At    int64 // the current due time, unix ms; 0 for PhaseUnknown
}

// StateReader is what State reads: the task rows and the id rows.
type StateReader interface {
	Get(ctx context.Context, refs []Ref) ([]*Task, error)
	IDStore
}

// State looks up the task named name: its id row, then its task row at the
// current due time (a cancel by id and due time marks only that row). An
// error is an outage of the store, never "unknown".
func State(ctx context.Context, s StateReader, name string, now time.Time) (TaskState, error) {
	id := TaskID(name)
	st, err := s.GetIDs(ctx, []uint64{id})
	if err != nil {
		return TaskState{}, fmt.Errorf("payload: state of %q: %w", name, err)
	}
	due := st[0].Due()
	switch {
	case st[0].Cancelled:
		return TaskState{Phase: PhaseCancelled, At: due}, nil
	case due == 0:
		return TaskState{Phase: PhaseUnknown}, nil
	}
	rows, err := s.Get(ctx, []Ref{{ID: id, ExecAt: due}})
	if err != nil {
		return TaskState{}, fmt.Errorf("payload: state of %q: %w", name, err)
	}
	switch r := rows[0]; {
	case r != nil && r.Cancel:
		return TaskState{Phase: PhaseCancelled, At: due}, nil
	case due > now.UnixMilli():
		return TaskState{Phase: PhasePending, At: due}, nil
	default:
		return TaskState{Phase: PhaseDone, At: due}, nil
	}
}

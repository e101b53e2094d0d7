package payload

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/delayq/delayq/taskstate"
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

// IDState is what the id row of a task name holds (taskstate.State: its
// rules live there).
type IDState = taskstate.State

// IDWrite sets cells of an id row (taskstate.Write).
type IDWrite = taskstate.Write

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
	// At is the current due time, unix ms; 0 for PhaseUnknown, and for a
	// name cancelled by id alone of which no task was ever stored.
	At int64
	// CancelledByID is the record time (unix ms) of the cancel by id alone
	// that cancelled the name (PhaseCancelled); 0 when none, or when its
	// id row was written before that time was kept.
	CancelledByID int64
	// BlockedUntil is when that cancel stops blocking the name (unix ms):
	// a submit or replace of it recorded before then is refused ("id
	// cancelled"). 0 when CancelledByID is.
	BlockedUntil int64
	// Reused: At is the due time of a submit recorded after the cancel by
	// id alone (refused, or cancelled by it when ingest stored it before it
	// read the cancel), not of the task the cancel was meant for.
	Reused bool
}

// DefaultCancelBlock is how long a cancel by id alone blocks its name
// with delayd's defaults: DefaultMaxDelay + 7 days of retention.
const DefaultCancelBlock = DefaultMaxDelay + 7*24*time.Hour

// StateReader is what State reads: the task rows and the id rows.
type StateReader interface {
	Get(ctx context.Context, refs []Ref) ([]*Task, error)
	IDStore
}

// State looks up the task named name: its id row, then its task row at the
// current due time (a cancel by id and due time marks only that row). An
// error is an outage of the store, never "unknown". A cancel by id alone
// is dated with delayd's defaults (DefaultCancelBlock); StateWith takes
// the block of its --max-delay + --retention.
func State(ctx context.Context, s StateReader, name string, now time.Time) (TaskState, error) {
	return StateWith(ctx, s, name, now, DefaultCancelBlock)
}

// StateWith is State for a delayd whose cancel by id alone blocks its
// name for block (--max-delay + --retention).
func StateWith(ctx context.Context, s StateReader, name string, now time.Time, block time.Duration) (TaskState, error) {
	id := TaskID(name)
	st, err := s.GetIDs(ctx, []uint64{id})
	if err != nil {
		return TaskState{}, fmt.Errorf("payload: state of %q: %w", name, err)
	}
	due := st[0].Due()
	switch {
	case st[0].Cancelled:
		return TaskState{Phase: PhaseCancelled, At: due, CancelledByID: st[0].CancelRecorded,
			BlockedUntil: st[0].BlockEnd(block),
			Reused:       st[0].CancelRecorded != 0 && st[0].SubmitRecorded > st[0].CancelRecorded}, nil
	case due == 0:
		return TaskState{Phase: PhaseUnknown}, nil
	}
	rows, err := s.Get(ctx, []Ref{{ID: st[0].Row(id), ExecAt: due}})
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

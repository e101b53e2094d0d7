package payloadtest

import (
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// testIDRows checks the id rows: cells written apart are read together, a
// zero field leaves its cell, Moving -1 clears it, cancel sticks, the
// record times and replace cells (taskstate.State) are kept, and State
// reads them.
func testIDRows(t *testing.T, s payload.Store, w window) {
	ids, ok := s.(payload.StateReader)
	if !ok {
		t.Fatalf("%T keeps no id rows (payload.IDStore)", s)
	}
	a, b, c := task(w, 1), task(w, 2), task(w, 3)
	put(t, s, a, b)
	writes := []payload.IDWrite{
		{ID: a.ID, Name: a.Name, Submitted: a.ExecAt},
		{ID: b.ID, Name: b.Name, Submitted: b.ExecAt, Moving: w.at(50_000), SubmitRecorded: 111, MoveRecorded: 222},
		{ID: c.ID, Name: c.Name, Cancel: true, CancelRecorded: 555, Replacing: w.at(70_000), ReplaceRecorded: 444, Version: 444},
	}
	if err := ids.PutIDs(ctx(t), writes); err != nil {
		t.Fatalf("PutIDs: %v", err)
	}
	if err := ids.PutIDs(ctx(t), []payload.IDWrite{{ID: b.ID, At: w.at(50_000), MoveFailed: 333}, {ID: a.ID, Moving: -1}}); err != nil {
		t.Fatalf("PutIDs: %v", err)
	}
	got, err := ids.GetIDs(ctx(t), []uint64{a.ID, b.ID, c.ID, a.ID ^ 1})
	if err != nil {
		t.Fatalf("GetIDs: %v", err)
	}
	want := []payload.IDState{
		{Submitted: a.ExecAt},
		{Submitted: b.ExecAt, At: w.at(50_000), Moving: w.at(50_000), SubmitRecorded: 111, MoveRecorded: 222, MoveFailed: 333},
		{Cancelled: true, CancelRecorded: 555, Replacing: w.at(70_000), ReplaceRecorded: 444, Version: 444},
		{},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("GetIDs[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if due := got[1].Due(); due != w.at(50_000) {
		t.Errorf("Due = %d, want the moved time %d", due, w.at(50_000))
	}

	for _, st := range []struct {
		name string
		want payload.TaskState
	}{
		{a.Name, payload.TaskState{Phase: payload.PhasePending, At: a.ExecAt}},
		// cancelled by id alone, no task ever stored: no due time, the block dated
		{c.Name, payload.TaskState{Phase: payload.PhaseCancelled, CancelledByID: 555,
			BlockedUntil: 555 + payload.DefaultCancelBlock.Milliseconds()}},
		{"never-" + a.Name, payload.TaskState{Phase: payload.PhaseUnknown}},
	} {
		got, err := payload.State(ctx(t), ids, st.name, time.UnixMilli(int64(w)))
		if err != nil {
			t.Fatalf("State(%s): %v", st.name, err)
		}
		if got != st.want {
			t.Errorf("State(%s) = %+v, want %+v", st.name, got, st.want)
		}
	}
	if got, _ := payload.StateWith(ctx(t), ids, c.Name, time.UnixMilli(int64(w)), time.Hour); got.BlockedUntil != 555+time.Hour.Milliseconds() {
		t.Errorf("StateWith(%s, 1h) = %+v, want blocked until %d", c.Name, got, 555+time.Hour.Milliseconds())
	}
	put(t, s, cancelOf(a))
	if got, _ := payload.State(ctx(t), ids, a.Name, time.UnixMilli(int64(w))); got.Phase != payload.PhaseCancelled {
		t.Errorf("State after a cancel by due time = %+v, want cancelled", got)
	}
	if got, _ := payload.State(ctx(t), ids, b.Name, time.UnixMilli(w.at(60_000))); got.Phase != payload.PhaseDone {
		t.Errorf("State after the due time = %+v, want %s", got, payload.PhaseDone)
	}
}

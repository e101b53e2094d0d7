package cli

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/taskstate"
	"github.com/delayq/delayq/zset"
)

// stateStore is a payload.StateReader of fixed task rows and id rows.
type stateStore struct {
	rows map[payload.Ref]*payload.Task
	ids  map[uint64]payload.IDState
}

func (s stateStore) Get(_ context.Context, refs []payload.Ref) ([]*payload.Task, error) {
	out := make([]*payload.Task, len(refs))
	for i, r := range refs {
		out[i] = s.rows[r]
	}
	return out, nil
}

func (s stateStore) GetIDs(_ context.Context, ids []uint64) ([]payload.IDState, error) {
	out := make([]payload.IDState, len(ids))
	for i, id := range ids {
		out[i] = s.ids[id]
	}
	return out, nil
}

func (stateStore) PutIDs(context.Context, []payload.IDWrite) error { return errors.New("read only") }

// entries is an inspectIndex of fixed entries.
type entries map[zset.Entry]bool

func (x entries) Pending(_ context.Context, e zset.Entry) (bool, error) { return x[e], nil }
func (entries) Key(e zset.Entry) string                                 { return "ix:zset" }

// inspect's pending is the state the API and the console answer
// (payload.State), not the Redis index: a replaced task (its row and
// entry under the replace's VersionID) is pending, a cancelled one whose
// entry lingers is not, a delivered one is not.
func TestInspectPendingIsTheState(t *testing.T) {
	now := time.UnixMilli(1_900_000_000_000)
	due, later := now.Add(time.Hour).UnixMilli(), now.Add(2*time.Hour).UnixMilli()
	id := func(name string) uint64 { return payload.TaskID(name) }
	const replacedAt = 1_899_999_999_000 // the replace's record time
	version := taskstate.VersionID(id("replaced"), replacedAt)
	task := func(cancel bool) *payload.Task {
		return &payload.Task{Topic: "orders", Value: []byte("v"), Cancel: cancel}
	}
	st := stateStore{
		rows: map[payload.Ref]*payload.Task{
			{ID: id("pending"), ExecAt: due}:       task(false),
			{ID: id("cancelled"), ExecAt: due}:     task(true),
			{ID: id("replaced"), ExecAt: due}:      task(true), // the old row, marked
			{ID: version, ExecAt: later}:           task(false),
			{ID: id("delivered"), ExecAt: 1000}:    task(false),
			{ID: id("rescheduled"), ExecAt: due}:   task(true),
			{ID: id("rescheduled"), ExecAt: later}: task(false),
		},
		ids: map[uint64]payload.IDState{
			id("pending"):     {Submitted: due},
			id("cancelled"):   {Submitted: due},
			id("replaced"):    {Submitted: due, At: later, Version: replacedAt},
			id("delivered"):   {Submitted: 1000},
			id("rescheduled"): {Submitted: due, At: later},
		},
	}
	ix := entries{
		{ID: id("pending"), ExecAt: due}:       true,
		{ID: id("cancelled"), ExecAt: due}:     true, // lingers until due
		{ID: version, ExecAt: later}:           true,
		{ID: id("rescheduled"), ExecAt: later}: true,
	}
	tests := []struct {
		name, id      string
		at            int64 // 0: without --at
		state         string
		pending       bool
		stored, index bool
	}{
		{name: "pending", id: "pending", state: "pending", pending: true, stored: true, index: true},
		{name: "cancelled by id and due time, entry lingering", id: "cancelled", state: "cancelled", stored: true, index: true},
		{name: "replaced: the replace's row", id: "replaced", state: "pending", pending: true, stored: true, index: true},
		{name: "rescheduled", id: "rescheduled", state: "pending", pending: true, stored: true, index: true},
		{name: "delivered", id: "delivered", state: "delivered-or-expired", stored: true},
		{name: "--at a cancelled row", id: "cancelled", at: due, state: "cancelled", stored: true, index: true},
		{name: "--at the row a reschedule left", id: "rescheduled", at: due, state: "cancelled", stored: true},
		{name: "--at a pending row", id: "pending", at: due, state: "pending", pending: true, stored: true, index: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, _, err := inspectRow(t.Context(), st, ix, tc.id, tc.at, tc.at != 0, now)
			if err != nil {
				t.Fatal(err)
			}
			if in.State != tc.state || in.Pending != tc.pending || in.Stored != tc.stored || in.Indexed != tc.index {
				t.Errorf("state %q pending %v stored %v indexed %v; want %q %v %v %v",
					in.State, in.Pending, in.Stored, in.Indexed, tc.state, tc.pending, tc.stored, tc.index)
			}
			if in.Pending && in.Cancelled {
				t.Error("pending beside cancelled")
			}
		})
	}
	if _, _, err := inspectRow(t.Context(), st, ix, "never", 0, false, now); !errors.Is(err, errNoIDRow) {
		t.Errorf("unknown id: %v, want errNoIDRow", err)
	}
}

package committed

import (
	"testing"

	fetchAPI "github.com/segmentio/kafka-go/protocol/fetch"
)

// TestAborts drives the read-committed rule batch by batch: each step is a
// data batch (want: delivered or not) or a transaction marker.
func TestAborts(t *testing.T) {
	type step struct {
		marker        bool  // a control batch: an abort (typ 0) or commit (1) marker
		typ           int16 // the marker's type
		base          int64 // a data batch's base offset
		producer      int64
		transactional bool
		want          bool // a data batch: delivered
	}
	data := func(base, producer int64, txn, want bool) step {
		return step{base: base, producer: producer, transactional: txn, want: want}
	}
	abort := func(producer int64) step { return step{marker: true, typ: markerAbort, producer: producer} }
	commit := func(producer int64) step { return step{marker: true, typ: 1, producer: producer} }
	aborted := func(producer, first int64) fetchAPI.ResponseTransaction {
		return fetchAPI.ResponseTransaction{ProducerID: producer, FirstOffset: first}
	}
	tests := []struct {
		name    string
		aborted []fetchAPI.ResponseTransaction
		steps   []step
	}{
		{
			name:  "no aborted transaction: plain and committed batches delivered",
			steps: []step{data(0, -1, false, true), data(1, 7, true, true), commit(7), data(3, -1, false, true)},
		},
		{
			name:    "an aborted transaction's batches dropped until its abort marker",
			aborted: []fetchAPI.ResponseTransaction{aborted(7, 1)},
			steps:   []step{data(0, 7, true, true), data(1, 7, true, false), data(2, 7, true, false), abort(7), data(4, 7, true, true)},
		},
		{
			name:    "a plain batch of the aborting producer, and another producer's, delivered meanwhile",
			aborted: []fetchAPI.ResponseTransaction{aborted(7, 0)},
			steps:   []step{data(0, 7, true, false), data(1, 7, false, true), data(2, 8, true, true), data(3, -1, false, true), abort(7)},
		},
		{
			name:    "entered at the first batch at or after its first offset, not before",
			aborted: []fetchAPI.ResponseTransaction{aborted(7, 5)},
			steps:   []step{data(0, 7, true, true), commit(7), data(5, 7, true, false), abort(7)},
		},
		{
			name:    "a batch starting past the first offset enters it too",
			aborted: []fetchAPI.ResponseTransaction{aborted(7, 5)},
			steps:   []step{data(8, 7, true, false)},
		},
		{
			name:    "listed out of order: taken by first offset",
			aborted: []fetchAPI.ResponseTransaction{aborted(8, 10), aborted(7, 2)},
			steps:   []step{data(2, 7, true, false), data(3, 8, true, true), abort(7), data(10, 8, true, false), data(11, 7, true, true), abort(8), data(13, 8, true, true)},
		},
		{
			name:    "a commit marker does not end an aborted transaction",
			aborted: []fetchAPI.ResponseTransaction{aborted(7, 0)},
			steps:   []step{data(0, 7, true, false), commit(7), data(2, 7, true, false)},
		},
		{
			name:    "the same producer aborts twice",
			aborted: []fetchAPI.ResponseTransaction{aborted(7, 0), aborted(7, 4)},
			steps:   []step{data(0, 7, true, false), abort(7), data(2, 7, true, true), commit(7), data(4, 7, true, false), abort(7), data(6, 7, true, true)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAborts(tt.aborted)
			for i, s := range tt.steps {
				if s.marker {
					a.marker(s.producer, s.typ)
					continue
				}
				if got := a.deliver(s.base, s.producer, s.transactional); got != s.want {
					t.Errorf("step %d: batch at %d of producer %d (transactional %v): delivered %v, want %v",
						i, s.base, s.producer, s.transactional, got, s.want)
				}
			}
		})
	}
}

// TestNewAbortsKeepsInput: sorting works on a copy of the response's list.
func TestNewAbortsKeepsInput(t *testing.T) {
	in := []fetchAPI.ResponseTransaction{{ProducerID: 2, FirstOffset: 9}, {ProducerID: 1, FirstOffset: 3}}
	newAborts(in)
	if in[0].ProducerID != 2 || in[1].ProducerID != 1 {
		t.Errorf("newAborts reordered its input: %+v", in)
	}
}

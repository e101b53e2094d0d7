package committed

import (
	"cmp"
	"slices"

	fetchAPI "github.com/segmentio/kafka-go/protocol/fetch"
)

// markerAbort is the type of an abort marker's control record (a commit
// marker's is 1).
const markerAbort = 0

// aborts is the read-committed rule of one fetch response, as the Java
// client's CompletedFetch applies it: the response lists the aborted
// transactions it overlaps (producer, first offset); going through the
// batches in offset order, a producer enters its aborted transaction at
// the first batch at or after that offset, and leaves it at its abort
// marker. A transactional batch of a producer inside an aborted
// transaction is dropped; everything else is delivered. It is a function
// of what it is told, with no I/O.
type aborts struct {
	pending []fetchAPI.ResponseTransaction // not entered yet, by first offset
	inside  map[int64]bool                 // producers inside an aborted transaction
}

// newAborts returns the rule for a response listing txns (in any order).
func newAborts(txns []fetchAPI.ResponseTransaction) *aborts {
	pending := slices.Clone(txns)
	slices.SortStableFunc(pending, func(a, b fetchAPI.ResponseTransaction) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return &aborts{pending: pending, inside: map[int64]bool{}}
}

// deliver reports whether the records of the data batch at base, written
// by producer (transactional or not), are delivered. Batches come in
// offset order.
func (a *aborts) deliver(base, producer int64, transactional bool) bool {
	for len(a.pending) > 0 && a.pending[0].FirstOffset <= base {
		a.inside[a.pending[0].ProducerID] = true
		a.pending = a.pending[1:]
	}
	return !transactional || !a.inside[producer]
}

// marker notes a transaction marker of producer, of control record type
// typ: an abort marker ends its aborted transaction; a commit marker
// changes nothing.
func (a *aborts) marker(producer int64, typ int16) {
	if typ == markerAbort {
		delete(a.inside, producer)
	}
}

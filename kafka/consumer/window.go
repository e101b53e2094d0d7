package consumer

import (
	"slices"
	"sync"
)

// Window is a sliding-window offset committer for one partition: offsets
// are handed out in increasing order (Start) and finished in any order
// (Done); the commit offset is one past the longest finished prefix. Gaps
// between started offsets are fine. The zero value is not usable; call
// NewWindow. A Window is safe for concurrent use.
type Window struct {
	mu        sync.Mutex
	slots     []slot // started, not yet committed; ascending; from head
	head      int
	last      int64 // last started offset, -1 before the first
	committed int64 // last commit offset handed out by Done, -1 before the first
}

type slot struct {
	offset int64
	done   bool
}

// NewWindow returns an empty Window.
func NewWindow() *Window {
	return &Window{last: -1, committed: -1}
}

// Start records that offset was handed out. Offsets must be started in
// increasing order; an offset not above the last started one is ignored
// (the commit offset never goes backwards). After a rebalance or a seek,
// use a new Window.
func (w *Window) Start(offset int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if offset <= w.last {
		return
	}
	w.last = offset
	if w.head > 0 && w.head >= len(w.slots)/2 {
		n := copy(w.slots, w.slots[w.head:])
		w.slots = w.slots[:n]
		w.head = 0
	}
	w.slots = append(w.slots, slot{offset: offset})
}

// Done records that offset finished. ok is true when the low-water mark
// advanced; commit is then the offset to commit: the last offset of the
// finished prefix plus one. When ok is false, commit is the previous commit
// offset (-1 if there was none). Done of an offset that was not started, or
// is done already, changes nothing.
func (w *Window) Done(offset int64) (commit int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	live := w.slots[w.head:]
	i, found := slices.BinarySearchFunc(live, offset, func(s slot, o int64) int {
		switch {
		case s.offset < o:
			return -1
		case s.offset > o:
			return 1
		}
		return 0
	})
	if !found || live[i].done {
		return w.committed, false
	}
	live[i].done = true
	if i != 0 {
		return w.committed, false
	}
	for w.head < len(w.slots) && w.slots[w.head].done {
		w.head++
	}
	w.committed = w.slots[w.head-1].offset + 1
	if w.head == len(w.slots) {
		w.slots, w.head = w.slots[:0], 0
	}
	return w.committed, true
}

// Len returns the number of started offsets not yet covered by a commit.
func (w *Window) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.slots) - w.head
}

// Committed returns the last commit offset Done reported; ok is false when
// Done never advanced.
func (w *Window) Committed() (commit int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.committed, w.committed >= 0
}

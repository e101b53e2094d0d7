package consumer

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

// op is one step of a Window script: Start(start) when done < 0, else
// Done(done) expecting (commit, ok).
type op struct {
	start  int64
	done   int64
	commit int64
	ok     bool
}

func s(offsets ...int64) []op {
	ops := make([]op, len(offsets))
	for i, o := range offsets {
		ops[i] = op{start: o, done: -1}
	}
	return ops
}

func d(offset, commit int64, ok bool) op { return op{done: offset, commit: commit, ok: ok} }

func script(parts ...[]op) []op {
	var out []op
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestWindow(t *testing.T) {
	tests := []struct {
		name string
		ops  []op
		len  int // Len at the end
	}{
		{"in order", script(s(0, 1, 2), []op{d(0, 1, true), d(1, 2, true), d(2, 3, true)}), 0},
		{"reverse order", script(s(0, 1, 2, 3), []op{d(3, -1, false), d(2, -1, false), d(1, -1, false), d(0, 4, true)}), 0},
		{"middle first", script(s(10, 11, 12), []op{d(11, -1, false), d(10, 12, true), d(12, 13, true)}), 0},
		{"holds at the lowest unfinished", script(s(0, 1, 2, 3), []op{d(0, 1, true), d(2, 1, false), d(3, 1, false)}), 3},
		{"gaps do not block", script(s(5, 7, 8, 12), []op{d(7, -1, false), d(5, 8, true), d(12, 8, false), d(8, 13, true)}), 0},
		{"done twice", script(s(0, 1), []op{d(1, -1, false), d(1, -1, false), d(0, 2, true), d(0, 2, false)}), 0},
		{"unknown offset", script(s(0, 2), []op{d(1, -1, false), d(3, -1, false), d(0, 1, true)}), 1},
		{"start backwards is ignored", script(s(10, 5, 10), []op{d(5, -1, false), d(10, 11, true)}), 0},
		{"never backwards after a late start", script(s(0, 1), []op{d(0, 1, true), d(1, 2, true)}, s(1, 0, 3), []op{d(1, 2, false), d(3, 4, true)}), 0},
		{"interleaved", script(s(0), s(1), []op{d(1, -1, false)}, s(2), []op{d(0, 2, true)}, s(3), []op{d(3, 2, false), d(2, 4, true)}), 0},
		{"empty window", []op{d(0, -1, false)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow()
			for i, o := range tt.ops {
				if o.done < 0 {
					w.Start(o.start)
					continue
				}
				commit, ok := w.Done(o.done)
				if commit != o.commit || ok != o.ok {
					t.Fatalf("step %d: Done(%d) = (%d, %v), want (%d, %v)", i, o.done, commit, ok, o.commit, o.ok)
				}
			}
			if got := w.Len(); got != tt.len {
				t.Fatalf("Len = %d, want %d", got, tt.len)
			}
		})
	}
}

func TestWindowCommitted(t *testing.T) {
	w := NewWindow()
	if _, ok := w.Committed(); ok {
		t.Fatal("Committed before any Done")
	}
	w.Start(41)
	w.Done(41)
	if c, ok := w.Committed(); !ok || c != 42 {
		t.Fatalf("Committed = (%d, %v), want (42, true)", c, ok)
	}
}

// TestWindowRandom checks the invariants over random gaps and finishing
// orders: the commit never goes backwards, never passes an unfinished
// offset, and ends one past the last offset.
func TestWindowRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		w := NewWindow()
		var offsets []int64
		next := int64(r.IntN(100))
		for range 1 + r.IntN(300) {
			offsets = append(offsets, next)
			w.Start(next)
			next += 1 + int64(r.IntN(3)) // gaps of up to 2
		}
		order := r.Perm(len(offsets))
		done := make(map[int64]bool)
		last := int64(-1)
		for _, i := range order {
			done[offsets[i]] = true
			commit, ok := w.Done(offsets[i])
			if ok {
				if commit <= last {
					t.Fatalf("round %d: commit went from %d to %d", round, last, commit)
				}
				last = commit
			} else if commit != last {
				t.Fatalf("round %d: not advanced but commit %d != previous %d", round, commit, last)
			}
			// Every started offset below the commit is done; the first
			// unfinished offset is at or above it.
			for _, o := range offsets {
				if o >= last {
					break
				}
				if !done[o] {
					t.Fatalf("round %d: commit %d passes unfinished %d", round, last, o)
				}
			}
		}
		if want := offsets[len(offsets)-1] + 1; last != want {
			t.Fatalf("round %d: final commit %d, want %d", round, last, want)
		}
		if w.Len() != 0 {
			t.Fatalf("round %d: Len = %d after all done", round, w.Len())
		}
	}
}

func TestWindowConcurrent(t *testing.T) {
	const n = 10_000
	w := NewWindow()
	for o := range int64(n) {
		w.Start(o)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		highest int64 = -1
	)
	for g := range 4 {
		wg.Go(func() {
			for o := int64(g); o < n; o += 4 {
				if c, ok := w.Done(o); ok {
					mu.Lock()
					highest = max(highest, c)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if highest != n {
		t.Fatalf("final commit %d, want %d", highest, n)
	}
}

func BenchmarkWindow(b *testing.B) {
	for _, inflight := range []int{1, 64, 1024} {
		b.Run("inflight="+strconv.Itoa(inflight), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			perm := r.Perm(inflight)
			w := NewWindow()
			var base int64
			b.ReportAllocs()
			for b.Loop() {
				// One round: start inflight offsets, finish them shuffled.
				for i := range inflight {
					w.Start(base + int64(i))
				}
				for _, i := range perm {
					w.Done(base + int64(i))
				}
				base += int64(inflight)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*inflight), "ns/offset")
		})
	}
}

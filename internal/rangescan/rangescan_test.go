package rangescan

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// rows is a store of tasks due at the given times (ids 1, 2, …); a task
// with Cancel set is left out by the pipelines under test. failAt makes
// the scan fail when it reaches that row (0-based; -1: never); stopAt
// calls stop before handing that row over (-1: never).
type rows struct {
	tasks  []payload.Task
	failAt int
	stopAt int
	stop   func()
}

func (r rows) Scan(ctx context.Context, from, to int64, fn func(payload.Task) error) error {
	for i, t := range r.tasks {
		if t.ExecAt < from || t.ExecAt >= to {
			continue
		}
		if i == r.failAt {
			return errors.New("region server gone")
		}
		if i == r.stopAt {
			r.stop()
		}
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

func tasks(dues ...int64) []payload.Task {
	out := make([]payload.Task, len(dues))
	for i, at := range dues {
		out[i] = payload.Task{ID: uint64(i + 1), ExecAt: at}
	}
	return out
}

func TestRun(t *testing.T) {
	dues := []int64{100, 110, 110, 120, 130, 140, 150}
	cases := []struct {
		name      string
		batch     int
		drain     time.Duration
		cancel    []int // indexes of rows Keep leaves out
		failAt    int   // the store fails at this row
		stopAt    int   // ctx ends before this row
		failFlush int   // this flush (1-based) fails
		// what the flushes got, the cursor and the error's text
		flushed [][]uint64
		cur     Cursor
		err     string
		// progress calls: one a flush unless set (a complete run ending
		// on a full batch flushes nothing more, and reports once more)
		progress int
	}{
		{name: "complete", batch: 3, failAt: -1, stopAt: -1,
			flushed: [][]uint64{{1, 2, 3}, {4, 5, 6}, {7}}, cur: Cursor{Scanned: 7, Position: 150, Resume: 1000}},
		{name: "rows left out", batch: 2, cancel: []int{0, 3}, failAt: -1, stopAt: -1,
			flushed: [][]uint64{{2, 3}, {5, 6}, {7}}, cur: Cursor{Scanned: 7, Position: 150, Resume: 1000}},
		{name: "batch exactly full at the end", batch: 7, failAt: -1, stopAt: -1,
			flushed: [][]uint64{{1, 2, 3, 4, 5, 6, 7}}, cur: Cursor{Scanned: 7, Position: 150, Resume: 1000}, progress: 2},
		{name: "flush fails: resume before its batch", batch: 3, failAt: -1, stopAt: -1, failFlush: 2,
			flushed: [][]uint64{{1, 2, 3}}, cur: Cursor{Scanned: 6, Position: 140, Resume: 110}, err: "flush 2 failed"},
		{name: "interrupted without drain: the batch in hand stays", batch: 3, failAt: -1, stopAt: 4,
			flushed: [][]uint64{{1, 2, 3}}, cur: Cursor{Scanned: 4, Position: 120, Resume: 110}, err: "test: interrupted: context canceled"},
		{name: "interrupted with drain: the batch in hand is flushed", batch: 3, drain: time.Second, failAt: -1, stopAt: 4,
			flushed: [][]uint64{{1, 2, 3}, {4}}, cur: Cursor{Scanned: 4, Position: 120, Resume: 120}, err: "test: interrupted: context canceled"},
		{name: "store fails without drain", batch: 3, failAt: 5, stopAt: -1,
			flushed: [][]uint64{{1, 2, 3}}, cur: Cursor{Scanned: 5, Position: 130, Resume: 110}, err: "test: scan: region server gone"},
		{name: "store fails with drain", batch: 3, drain: time.Second, failAt: 5, stopAt: -1,
			flushed: [][]uint64{{1, 2, 3}, {4, 5}}, cur: Cursor{Scanned: 5, Position: 130, Resume: 130}, err: "test: scan: region server gone"},
		{name: "drain fails too", batch: 3, drain: time.Second, failAt: 5, stopAt: -1, failFlush: 2,
			flushed: [][]uint64{{1, 2, 3}}, cur: Cursor{Scanned: 5, Position: 130, Resume: 110}, err: "test: scan: region server gone\nflush 2 failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			all := tasks(dues...)
			for _, i := range tc.cancel {
				all[i].Cancel = true
			}
			var flushed [][]uint64
			var progress []Cursor
			p := Pipeline[uint64]{
				Name: "test", From: 100, To: 1000, BatchSize: tc.batch, Drain: tc.drain,
				Keep: func(t payload.Task) (uint64, bool) { return t.ID, !t.Cancel },
				Flush: func(ctx context.Context, batch []uint64) error {
					if len(flushed)+1 == tc.failFlush {
						return errors.New("flush 2 failed")
					}
					if err := ctx.Err(); err != nil {
						return err // a drain must get a live context
					}
					flushed = append(flushed, slices.Clone(batch))
					return nil
				},
				Progress: func(c Cursor) { progress = append(progress, c) },
			}
			cur, err := p.Run(ctx, rows{tasks: all, failAt: tc.failAt, stopAt: tc.stopAt, stop: cancel})
			if got := errText(err); got != tc.err {
				t.Errorf("error %q, want %q", got, tc.err)
			}
			if cur != tc.cur {
				t.Errorf("cursor %+v, want %+v", cur, tc.cur)
			}
			if !slices.EqualFunc(flushed, tc.flushed, slices.Equal) {
				t.Errorf("flushed %v, want %v", flushed, tc.flushed)
			}
			// Progress follows every successful flush, and never goes back.
			want := tc.progress
			if want == 0 {
				want = len(tc.flushed)
			}
			if len(progress) != want {
				t.Errorf("%d progress calls, want %d: %+v", len(progress), want, progress)
			}
			for i := 1; i < len(progress); i++ {
				if progress[i].Resume < progress[i-1].Resume {
					t.Errorf("resume went back: %+v", progress)
				}
			}
		})
	}
}

// A range with no row still ends complete, with one progress call.
func TestRunEmpty(t *testing.T) {
	calls := 0
	cur, err := Pipeline[uint64]{
		Name: "test", From: 5, To: 50, BatchSize: 10,
		Keep:     func(t payload.Task) (uint64, bool) { return t.ID, true },
		Flush:    func(context.Context, []uint64) error { t.Error("flush of nothing"); return nil },
		Progress: func(Cursor) { calls++ },
	}.Run(t.Context(), rows{failAt: -1, stopAt: -1})
	if err != nil || cur != (Cursor{Resume: 50}) || calls != 1 {
		t.Fatalf("cursor %+v, err %v, %d progress calls; want resume 50, nil, 1", cur, err, calls)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestAsk(t *testing.T) {
	items := []int{1, 2, 3, 4, 5, 6, 7, 8}
	var running, most atomic.Int32
	got, err := Ask(t.Context(), items, 3, func(_ context.Context, n int) (bool, error) {
		now := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		time.Sleep(time.Millisecond) // let checks overlap when the limit allows
		return n%2 == 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, true, false, true, false, true, false, true}; !slices.Equal(got, want) {
		t.Errorf("answers %v, want %v (in the items' order)", got, want)
	}
	if m := most.Load(); m > 3 {
		t.Errorf("%d checks at once, limit 3", m)
	}

	_, err = Ask(t.Context(), items, 2, func(_ context.Context, n int) (bool, error) {
		if n == 5 {
			return false, errors.New("redis gone")
		}
		return true, nil
	})
	if err == nil || !strings.Contains(err.Error(), "redis gone") {
		t.Errorf("error %v, want the check's", err)
	}
}

func TestValidate(t *testing.T) {
	errConfig := errors.New("x: invalid config")
	cases := []struct {
		name                       string
		from, to                   int64
		batch, checkers, wantCount int
	}{
		{"valid", 0, 1, 0, 0, 0},
		{"before 1970", -1, 1, 0, 0, 1},
		{"empty range", 5, 5, 0, 0, 1},
		{"all wrong", -5, -6, -1, -1, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(errConfig, tc.from, tc.to, tc.batch, tc.checkers)
			if len(errs) != tc.wantCount {
				t.Fatalf("%d errors %v, want %d", len(errs), errs, tc.wantCount)
			}
			for _, err := range errs {
				if !errors.Is(err, errConfig) {
					t.Errorf("%v does not wrap the sentinel", err)
				}
			}
		})
	}
}

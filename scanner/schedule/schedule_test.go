package schedule

import (
	"slices"
	"testing"
	"time"
)

// fixedHold holds everything due after cutoff.
type fixedHold int64

func (h fixedHold) Cutoff(now int64) int64 { return min(now, int64(h)) }
func (h fixedHold) Poll() time.Duration    { return 100 * time.Millisecond }

func ms(v int64) time.Time { return time.UnixMilli(v) }

func TestWake(t *testing.T) {
	for _, c := range []struct {
		name      string
		cfg       Config
		exec, now int64
		want      int64
		early     bool
	}{
		{"at the exec_at", Config{Coalesce: -1, Prefetch: 30 * time.Millisecond}, 1001, 0, 1001, true},
		{"coalesced, lead earlier", Config{Coalesce: 50 * time.Millisecond, Prefetch: 30 * time.Millisecond}, 1001, 0, 1020, true},
		{"lead at most coalesce", Config{Coalesce: 50 * time.Millisecond, Prefetch: time.Second}, 1000, 0, 950, true},
		{"hold not asked before the wake", Config{Hold: fixedHold(900)}, 1000, 500, 1000, true},
		{"held back: the hold's poll", Config{Hold: fixedHold(900)}, 1000, 2000, 2100, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, early := c.cfg.WakeFor(c.exec, ms(c.now))
			if got.UnixMilli() != c.want || early != c.early {
				t.Errorf("WakeFor(%d) at %d = %d, %v; want %d, %v", c.exec, c.now, got.UnixMilli(), early, c.want, c.early)
			}
		})
	}
}

func TestNext(t *testing.T) {
	co := Config{Coalesce: 50 * time.Millisecond, Prefetch: 50 * time.Millisecond}
	up := []Entry{{1, 1000}, {2, 1040}, {3, 1100}}
	for _, c := range []struct {
		name     string
		cfg      Config
		cur      Cursor
		now      int64
		due      []uint64
		step     Step
		wake     int64
		upcoming int
	}{
		{"early wake takes what is due by its slot", co, Cursor{Upcoming: up, Wake: ms(950), Early: true}, 950,
			[]uint64{1}, Step{}, 950, 2},
		{"a step at once takes only what is due", co, Cursor{Upcoming: up, Wake: ms(950)}, 950,
			nil, Step{}, 950, 3},
		{"late: all due by now", co, Cursor{Upcoming: up, Wake: ms(950), Early: true}, 1050,
			[]uint64{1, 2}, Step{}, 1050, 1},
		{"within the hold's cutoff", Config{Hold: fixedHold(1020)}, Cursor{Upcoming: up}, 1200,
			[]uint64{1}, Step{}, 1200, 2},
		{"done", co, Cursor{}, 1000, nil, Step{Done: true}, 0, 0},
		{"read in full, all parked", co, Cursor{More: true}, 1000, nil, Step{Parked: true}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cur := c.cur
			st := c.cfg.Next(&cur, ms(c.now))
			var ids []uint64
			for _, e := range st.Due {
				ids = append(ids, e.ID)
			}
			if !slices.Equal(ids, c.due) || st.Done != c.step.Done || st.Parked != c.step.Parked {
				t.Fatalf("Next = %+v, want due %v, %+v", st, c.due, c.step)
			}
			if len(cur.Upcoming) != c.upcoming {
				t.Errorf("%d upcoming left, want %d", len(cur.Upcoming), c.upcoming)
			}
			if c.wake != 0 && cur.Wake.UnixMilli() != c.wake {
				t.Errorf("next wake %d, want %d", cur.Wake.UnixMilli(), c.wake)
			}
			if len(st.Due) == 0 && len(cur.Upcoming) > 0 && !cur.More {
				t.Error("waiting without reading again: entries may arrive meanwhile")
			}
		})
	}
}

func TestRead(t *testing.T) {
	var c Cursor
	if flush, read := c.Read(); !flush || read {
		t.Errorf("ran out, last read short: Read = %v, %v; want flush only", flush, read)
	}
	c.Got([]Entry{{1, 1}, {2, 2}}, 2, func(e Entry) bool { return e.ID == 1 })
	if !c.More || len(c.Upcoming) != 1 || c.Upcoming[0].ID != 2 {
		t.Errorf("Got a full batch with one parked: %+v", c)
	}
	if flush, read := c.Read(); flush || read {
		t.Errorf("upcoming left: Read = %v, %v; want nothing", flush, read)
	}
}

func TestRelease(t *testing.T) {
	held := []int{1, 2, 3, 4}
	rated, free := Control{Rate: 10}, Control{}
	if got := Admit(rated, held, 2); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("Admit with 2 tokens = %v, want the lowest two", got)
	}
	if got := Admit(free, held, 0); len(got) != 4 {
		t.Errorf("Admit without a rate = %v, want all", got)
	}
	if Want(free, 4) != -1 || Want(rated, 4) != 4 {
		t.Error("Want: tokens asked without a rate, or not one each with one")
	}
	if !Again(free, 500, 500) || Again(rated, 500, 500) || Again(free, 499, 500) {
		t.Error("Again: another round only after a full batch without a rate")
	}
	if Forget(Control{Paused: true}, 0) || !Forget(free, 0) || Forget(free, 1) {
		t.Error("Forget: only a topic that holds nothing and no longer holds")
	}
	if Fence(100, 90, true) != 90 || Fence(100, 120, true) != 100 || Fence(100, 90, false) != 100 {
		t.Error("Fence: the earlier of the cutoff and the earliest pending entry")
	}
	if Route(Control{Paused: true}, false, false) != HoldBack || Route(Control{Rate: 1}, true, false) != Write ||
		Route(Control{Paused: true}, false, true) != Write || Route(free, false, false) != Write {
		t.Error("Route: hold only what a holding topic would deliver")
	}
}

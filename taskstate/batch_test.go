package taskstate

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// decide runs Begin and Decide on ops against the id row st (the same
// for every id) after the batch's own writes, at now.
func decide(st State, now int64, ops ...Op) *Plan {
	b := Begin(ops, func(int) bool { return false })
	states := make([]State, len(b.IDs))
	for k := range states {
		states[k] = st.Apply(b.Writes[k])
	}
	return Decide(b, states, now, Config{RescheduleGrace: 30 * time.Second})
}

func TestDecideRules(t *testing.T) {
	const (
		now  = int64(1_000_000_000)
		due  = now + 60_000
		to   = now + 90_000
		sec  = int64(1000)
		name = "a"
	)
	submit := func(rec int64) Op { return Op{ID: 1, Name: name, Kind: Submit, At: due, Recorded: rec} }
	resched := func(rec int64) Op { return Op{ID: 1, Name: name, Kind: Reschedule, At: to, Recorded: rec} }

	t.Run("young reschedule of an unknown id waits", func(t *testing.T) {
		p := decide(State{}, now, resched(now-10*sec))
		if len(p.Refused) != 0 || len(p.Ats) != 0 || len(p.Moves) != 0 {
			t.Errorf("plan %+v, want nothing: the reschedule waits in its cell", p)
		}
	})
	t.Run("old reschedule of an unknown id fails and is marked", func(t *testing.T) {
		p := decide(State{}, now, resched(now-31*sec))
		if !strings.Contains(p.Refused[0], `unknown delay-id "a"`) {
			t.Errorf("refused %v", p.Refused)
		}
		if len(p.Ats) != 1 || p.Ats[0].Moving != -1 || p.Ats[0].MoveFailed != now-31*sec {
			t.Errorf("ats %+v, want the cell cleared and marked failed", p.Ats)
		}
	})
	t.Run("re-read of a failed reschedule fails again though a task came", func(t *testing.T) {
		st := State{Submitted: due, SubmitRecorded: now - sec, MoveFailed: now - 31*sec}
		p := decide(st, now, resched(now-31*sec))
		if _, ok := p.Refused[0]; !ok || len(p.Moves) != 0 {
			t.Errorf("plan %+v, want the reschedule refused, no move", p)
		}
	})
	t.Run("a submit recorded after the grace is not moved", func(t *testing.T) {
		st := State{Moving: to, MoveRecorded: now - 40*sec}
		p := decide(st, now, submit(now))
		if p.Skip[0] || len(p.Copies) != 0 {
			t.Errorf("plan %+v, want the submit at its own due time", p)
		}
	})
	t.Run("a submit recorded within the grace is moved", func(t *testing.T) {
		st := State{Moving: to, MoveRecorded: now - 20*sec}
		p := decide(st, now, submit(now))
		if !p.Skip[0] || len(p.Copies) != 1 || p.Copies[0].To != to || p.Copies[0].Src != 0 {
			t.Errorf("plan %+v, want the submit copied to %d", p, to)
		}
	})
	t.Run("a reschedule finds a task submitted after its grace stale", func(t *testing.T) {
		st := State{Submitted: due, SubmitRecorded: now}
		p := decide(st, now, resched(now-40*sec))
		if _, ok := p.Refused[0]; !ok || len(p.Moves) != 0 {
			t.Errorf("plan %+v, want the reschedule refused, the task left", p)
		}
	})
	t.Run("a reschedule of a stored task reads its row, Settle moves it", func(t *testing.T) {
		p := decide(State{Submitted: due, SubmitRecorded: now - sec}, now, resched(now))
		if len(p.Moves) != 1 || p.Moves[0].From != due || p.Moves[0].To != to {
			t.Fatalf("moves %+v", p.Moves)
		}
		p.Settle([]Row{NoRow, Live}) // a move cut short after its copy
		if len(p.Copies) != 1 || p.Copies[0].Row != to || len(p.Markers) != 1 || p.Markers[0].At != due {
			t.Errorf("plan %+v, want the copy at %d finished and the old row marked", p, to)
		}
	})
	t.Run("a cancelled id marks its submit and refuses its reschedule", func(t *testing.T) {
		p := decide(State{Cancelled: true}, now, submit(now), resched(now))
		if !p.Skip[0] || !strings.Contains(p.Refused[1], "is cancelled") {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("a reschedule of a task already due fails", func(t *testing.T) {
		p := decide(State{Submitted: now - sec}, now, resched(now))
		if !strings.Contains(p.Refused[0], "delivered or being delivered") {
			t.Errorf("refused %v", p.Refused)
		}
	})
}

// TestDecideRescheduleBehindAStall: a reschedule that ingest reads after
// its task's due time (queued in delay-input behind a stall) moves the
// task when it was recorded the hold lead before that time, as a cancel in
// its place would win: the scanner's hold keeps the task until ingest has
// stored it. Recorded later than that, read after the hold's end, or with
// no hold (delay-input-slow, no watermarks), it is refused as before.
func TestDecideRescheduleBehindAStall(t *testing.T) {
	const (
		sec  = int64(1000)
		due  = int64(1_000_000_000)
		to   = due + 60*sec
		name = "a"
	)
	hold := Config{RescheduleGrace: 30 * time.Second, HoldLead: 2 * time.Second, MaxHold: 5 * time.Minute}
	noHold := Config{RescheduleGrace: 30 * time.Second}
	stored := State{Submitted: due, SubmitRecorded: due - 60*sec}
	resched := func(rec int64) Op { return Op{ID: 1, Name: name, Kind: Reschedule, At: to, Recorded: rec} }
	for _, c := range []struct {
		name  string
		cfg   Config
		now   int64
		ops   []Op
		moves bool
	}{
		{"recorded 3 s before due, read 10 s after it", hold, due + 10*sec, []Op{resched(due - 3*sec)}, true},
		{"recorded the lead before due exactly", hold, due + sec, []Op{resched(due - 2*sec)}, true},
		{"read at the due time", hold, due, []Op{resched(due - 3*sec)}, true},
		{"two in the batch, the earlier in time", hold, due + sec, []Op{resched(due - 3*sec), resched(due - sec)}, true},
		{"recorded within the lead", hold, due + sec, []Op{resched(due - 1999)}, false},
		{"recorded after the due time", hold, due + sec, []Op{resched(due + 500)}, false},
		{"read the max hold after its record time", hold, due - 3*sec + 5*60*sec, []Op{resched(due - 3*sec)}, false},
		{"no hold", noHold, due + 10*sec, []Op{resched(due - 3*sec)}, false},
		{"not due yet, no hold", noHold, due - sec, []Op{resched(due - 3*sec)}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := Begin(c.ops, func(int) bool { return false })
			p := Decide(b, []State{stored.Apply(b.Writes[0])}, c.now, c.cfg)
			moved := len(p.Moves) == 1 && p.Moves[0].From == due && p.Moves[0].To == to
			if moved != c.moves {
				t.Fatalf("moves %+v, refused %v; want moved %v", p.Moves, p.Refused, c.moves)
			}
			for i := range c.ops {
				text, refused := p.Refused[i]
				if refused == c.moves || !c.moves && !strings.Contains(text, "delivered or being delivered") {
					t.Errorf("op %d refused %v (%q), want refused %v", i, refused, text, !c.moves)
				}
			}
			if !c.moves {
				return
			}
			p.Settle([]Row{Live, NoRow})
			if len(p.Copies) != 1 || p.Copies[0].To != to || len(p.Markers) != 1 || p.Markers[0].At != due {
				t.Errorf("plan %+v, want the task copied to %d and its row at %d marked", p, to, due)
			}
		})
	}
}

func TestDecideReplace(t *testing.T) {
	const (
		now = int64(1_000_000_000)
		due = now + 60_000
		to  = now + 90_000
		sec = int64(1000)
	)
	submit := func(rec int64) Op { return Op{ID: 1, Name: "a", Kind: Submit, At: due, Recorded: rec} }
	replace := func(rec, at int64) Op { return Op{ID: 1, Name: "a", Kind: Replace, At: at, Recorded: rec} }
	stored := State{Submitted: due, SubmitRecorded: now - 10*sec}
	marked := func(p *Plan, id uint64, at int64) bool { return slices.Contains(p.Markers, Mark{id, "a", at}) }

	t.Run("a replace of a stored task marks it and becomes current", func(t *testing.T) {
		p := decide(stored, now, replace(now-sec, to))
		v := VersionID(1, now-sec)
		if p.Skip[0] || !marked(p, 1, due) || marked(p, v, to) || len(p.Refused) != 0 {
			t.Errorf("plan %+v, want the old row marked, the new one indexed", p)
		}
		if len(p.Ats) != 1 || p.Ats[0].At != to || p.Ats[0].Version != now-sec {
			t.Errorf("ats %+v, want d:a %d and d:v %d", p.Ats, to, now-sec)
		}
	})
	t.Run("a replace due at the old time marks only the old row", func(t *testing.T) {
		p := decide(stored, now, replace(now-sec, due))
		if p.Skip[0] || !marked(p, 1, due) || marked(p, VersionID(1, now-sec), due) {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("a submit recorded before a replace carried out is marked", func(t *testing.T) {
		st := State{At: to, Replacing: to, ReplaceRecorded: now - sec, Version: now - sec}
		p := decide(st, now, submit(now-2*sec))
		if !p.Skip[0] || !marked(p, 1, due) {
			t.Errorf("plan %+v, want the late submit superseded", p)
		}
	})
	t.Run("an older replace read again after a newer one is marked", func(t *testing.T) {
		st := State{At: to, Replacing: to, ReplaceRecorded: now - sec, Version: now - sec}
		p := decide(st, now, replace(now-5*sec, due))
		if !p.Skip[0] || !marked(p, VersionID(1, now-5*sec), due) || marked(p, VersionID(1, now-sec), to) || len(p.Ats) != 0 {
			t.Errorf("plan %+v, want the older replace superseded, the newer left", p)
		}
	})
	t.Run("a replace of an unknown id is a submit", func(t *testing.T) {
		p := decide(State{}, now, replace(now-sec, to))
		if p.Skip[0] || len(p.Refused) != 0 || len(p.Markers) != 0 {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("a replace after a cancel by id is refused, one before it cancelled", func(t *testing.T) {
		p := decide(State{Cancelled: true, CancelRecorded: now - 2*sec}, now, replace(now-sec, to))
		if !p.Skip[0] || !strings.HasPrefix(p.Refused[0], `id cancelled: replace of delay-id "a" refused`) {
			t.Errorf("plan %+v, want the replace refused", p)
		}
		p = decide(State{Cancelled: true, CancelRecorded: now}, now, replace(now-sec, to))
		if _, refused := p.Refused[0]; !p.Skip[0] || refused || !marked(p, VersionID(1, now-sec), to) {
			t.Errorf("plan %+v, want the replace marked, not refused", p)
		}
	})
	t.Run("a reschedule recorded after the replace, read first, moves the new task", func(t *testing.T) {
		st := State{Submitted: due, At: to, Moving: to, MoveRecorded: now}
		p := decide(st, now, replace(now-sec, due+5*sec))
		v := VersionID(1, now-sec)
		if !p.Skip[0] || len(p.Copies) != 1 || p.Copies[0].ID != v || p.Copies[0].To != to || !marked(p, v, due+5*sec) {
			t.Errorf("plan %+v, want the replace copied to the reschedule's time", p)
		}
	})
}

// TestDecideReuse: a cancel by id alone blocks its id; a submit or replace
// recorded after it reuses the id and is refused with the block's end, one
// recorded before it is the task it overtook and is cancelled silently.
func TestDecideReuse(t *testing.T) {
	const (
		now   = int64(1_000_000_000_000)
		due   = now + 60_000
		sec   = int64(1000)
		block = time.Hour
	)
	cfg := Config{RescheduleGrace: 30 * time.Second, CancelBlock: block}
	cancelled := State{Cancelled: true, CancelRecorded: now - 10*sec}
	end := formatTime(now - 10*sec + block.Milliseconds())
	op := func(k Kind, rec int64) Op { return Op{ID: 1, Name: "o-42", Kind: k, At: due, Recorded: rec} }
	cases := []struct {
		name    string
		st      State
		op      Op
		refused string // prefix of the refusal, "" none
		marked  bool   // the op's row gets the cancel marker
	}{
		{"a submit recorded after the cancel is refused", cancelled, op(Submit, now),
			`id cancelled: submit of delay-id "o-42" refused: the id was cancelled by id alone at ` + formatTime(now-10*sec) + ` and a task submitted with it after the cancel is refused until ` + end, true},
		{"a submit recorded before the cancel is cancelled silently", cancelled, op(Submit, now-20*sec), "", true},
		{"a submit recorded at the cancel's millisecond is its task", cancelled, op(Submit, now-10*sec), "", true},
		{"a replace recorded after the cancel is refused", cancelled, op(Replace, now),
			`id cancelled: replace of delay-id "o-42" refused`, true},
		{"a submit after the block's end is stored", cancelled, op(Submit, now-10*sec+block.Milliseconds()), "", false},
		{"a submit just before the block's end is refused", cancelled, op(Submit, now-10*sec+block.Milliseconds()-1), "id cancelled: submit", true},
		{"a row without d:xr never refuses a submit", State{Cancelled: true}, op(Submit, now), "", true},
		{"an id not cancelled takes the submit", State{}, op(Submit, now), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := Begin([]Op{c.op}, func(int) bool { return false })
			p := Decide(b, []State{c.st.Apply(b.Writes[0])}, now, cfg)
			got := p.Refused[0]
			if c.refused == "" && got != "" || !strings.HasPrefix(got, c.refused) {
				t.Errorf("refused %q, want %q…", got, c.refused)
			}
			if m := slices.Contains(p.Markers, Mark{c.op.row(), "o-42", due}); m != c.marked || p.Skip[0] != c.marked {
				t.Errorf("marked %v, skipped %v, want %v", m, p.Skip[0], c.marked)
			}
		})
	}
	t.Run("a re-read decides the same, whenever it is read", func(t *testing.T) {
		o := op(Submit, now-10*sec+block.Milliseconds()-1)
		for _, at := range []int64{now, now + 2*block.Milliseconds()} {
			b := Begin([]Op{o}, func(int) bool { return false })
			p := Decide(b, []State{cancelled.Apply(b.Writes[0])}, at, cfg)
			if _, ok := p.Refused[0]; !ok {
				t.Errorf("read at %d: not refused", at)
			}
		}
	})
}

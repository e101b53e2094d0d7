package soak

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
)

// TestWindows: a window judges only the tasks due in it; Outside the
// rest; recurring occurrences are told apart by their number.
func TestWindows(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := e2etest.NewLedger()
	due := map[string]time.Time{}
	add := func(seq string, at time.Duration) {
		l.Due[seq] = e2etest.Due{At: t0.Add(at)}
		due[seq] = t0.Add(at)
	}
	add("a", 5*time.Second)
	add("b", 15*time.Second)
	add("s#1", 20*time.Second)
	add("s#2", 22*time.Second)
	l.Cancelled["c"], due["c"] = true, t0.Add(12*time.Second)
	msg := func(seq, occ string, at time.Duration) e2etest.Received {
		hs := []kafka.Header{{Key: "seq", Value: []byte(seq)}}
		if occ != "" {
			hs = append(hs, kafka.Header{Key: "delay-occurrence", Value: []byte(occ)})
		}
		return e2etest.Received{Msg: kafka.Message{Headers: hs, Time: t0.Add(at)}}
	}
	got := Occurrences([]e2etest.Received{
		msg("a", "", 6*time.Second), msg("c", "", 13*time.Second),
		msg("s", "1", 20*time.Second), msg("s", "1", 21*time.Second), msg("s", "2", 25*time.Second),
	}, map[string]bool{"s": true})

	win := []struct {
		name                            string
		from, to                        time.Duration
		tasks, lost, dups, cancelled, n int
	}{
		{"first task only", 0, 10 * time.Second, 1, 0, 0, 0, 1},
		{"b lost, c delivered", 10 * time.Second, 16 * time.Second, 1, 1, 0, 1, 0},
		{"series: one duplicate", 19 * time.Second, 30 * time.Second, 2, 0, 1, 0, 2},
	}
	var windows [][2]time.Time
	for _, w := range win {
		t.Run(w.name, func(t *testing.T) {
			from, to := t0.Add(w.from), t0.Add(w.to)
			windows = append(windows, [2]time.Time{from, to})
			r := Within(l, due, from, to).Judge(got)
			if r.Accepted != w.tasks || r.Lost != w.lost || r.Duplicates != w.dups || r.CancelledDelivered != w.cancelled || r.Delivered != w.n {
				t.Errorf("got %s delivered=%d, want tasks=%d lost=%d duplicates=%d cancelled_delivered=%d delivered=%d",
					Figures(r), r.Delivered, w.tasks, w.lost, w.dups, w.cancelled, w.n)
			}
		})
	}
	if r := Outside(l, due, windows).Judge(got); r.Accepted != 0 || r.Lost != 0 {
		t.Errorf("outside every window: %s, want no task", Figures(r))
	}
	if r := Outside(l, due, windows[:1]).Judge(got); r.Accepted != 3 || r.Lost != 1 || r.CancelledDelivered != 1 {
		t.Errorf("outside the first window: %s, want 3 tasks, 1 lost, 1 cancelled delivered", Figures(r))
	}
}

// TestEarlySeqs names the tasks delivered before their due time only.
func TestEarlySeqs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := e2etest.NewLedger()
	l.Due["a"], l.Due["b"] = e2etest.Due{At: t0}, e2etest.Due{At: t0}
	at := func(seq string, d time.Duration) e2etest.Received {
		return e2etest.Received{Msg: kafka.Message{Time: t0.Add(d), Headers: []kafka.Header{{Key: "seq", Value: []byte(seq)}}}}
	}
	got := EarlySeqs(l, []e2etest.Received{at("a", -time.Millisecond), at("b", 0), at("c", -time.Second)})
	if len(got) != 1 || got[0] != "a" {
		t.Errorf("EarlySeqs = %v, want [a]", got)
	}
}

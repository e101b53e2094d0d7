package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/payload"
)

// TestRecurring: a task every 2 s with delay-count 10 is delivered ten
// times, occurrences 1..10 at their own times, across a SIGTERM restart
// (no duplicate allowed) and a kill -9 of delayd (duplicates allowed,
// counted and logged). Beside it a series cancelled by id and due time of
// its third occurrence stops after the second, and one (every 5 s)
// cancelled by id alone after its first occurrence stops there.
func TestRecurring(t *testing.T) {
	e := newEnv(t)
	topic := e.Topic("recur")
	out := e.Collect(topic)
	d := e.Start("d0")

	const (
		every = 2 * time.Second
		count = 10
	)
	ctx := context.Background()
	first := time.Now().Add(3 * time.Second).Truncate(time.Second)
	series := func(name string, every time.Duration, extra ...kafka.Header) kafka.Message {
		return kafka.Message{
			Key: []byte(name), Value: []byte("tick"),
			Headers: append([]kafka.Header{
				{Key: payload.HeaderTopic, Value: []byte(topic)},
				{Key: payload.HeaderID, Value: []byte(e.Seq(name))},
				{Key: payload.HeaderAt, Value: []byte(first.UTC().Format(time.RFC3339Nano))},
				{Key: payload.HeaderEvery, Value: []byte(every.String())},
			}, extra...),
		}
	}
	long := kafka.Header{Key: payload.HeaderCount, Value: []byte("1000")}
	e.Produce(ctx, []kafka.Message{
		series("r", every, kafka.Header{Key: payload.HeaderCount, Value: []byte(strconv.Itoa(count))}),
		// c and b would run for ever but for their cancels; an endless
		// series under a minute apart is refused, so they get a count.
		series("c", every, long),
		series("b", 5*time.Second, long), // cancelled by id alone once its first occurrence is out
	})
	// The third occurrence of "c" is cancelled by id and its due time.
	e.Produce(ctx, []kafka.Message{{Headers: []kafka.Header{
		{Key: payload.HeaderOp, Value: []byte(payload.OpCancel)},
		{Key: payload.HeaderID, Value: []byte(e.Seq("c"))},
		{Key: payload.HeaderAt, Value: []byte(first.Add(2 * every).UTC().Format(time.RFC3339Nano))},
	}}})

	// occ counts the deliveries of each occurrence of series name.
	occ := func(name string) map[int]int {
		m := map[int]int{}
		for _, r := range out.Snapshot() {
			if e2etest.Header(r.Msg, payload.HeaderID) == e.Seq(name) {
				n, _ := strconv.Atoi(e2etest.Header(r.Msg, payload.HeaderOccurrence))
				m[n]++
			}
		}
		return m
	}
	dups := func(m map[int]int) (n int) {
		for _, c := range m {
			n += c - 1
		}
		return n
	}

	e2etest.WaitFor(t, 30*time.Second, "occurrence 1 of the series cancelled by id", func() bool { return occ("b")[1] > 0 })
	e.Produce(ctx, []kafka.Message{{Headers: []kafka.Header{
		{Key: payload.HeaderOp, Value: []byte(payload.OpCancel)},
		{Key: payload.HeaderID, Value: []byte(e.Seq("b"))},
	}}})
	e2etest.WaitFor(t, 30*time.Second, "occurrence 3", func() bool { return occ("r")[3] > 0 })
	d.Stop(t)
	t.Logf("SIGTERM after occurrences %v", occ("r"))
	d = e.Start("d1")
	e2etest.WaitFor(t, 60*time.Second, "occurrence 6", func() bool { return occ("r")[6] > 0 })
	beforeKill := occ("r")
	if n := dups(beforeKill); n != 0 {
		t.Errorf("%d duplicates across the SIGTERM restart: %v", n, beforeKill)
	}
	d.Kill()
	t.Logf("kill -9 after occurrences %v", beforeKill)
	e.Start("d2")
	e2etest.WaitFor(t, 60*time.Second, "occurrence 10", func() bool { return occ("r")[count] > 0 })
	time.Sleep(2*every + time.Second) // an 11th would be due by now

	got := occ("r")
	for n := 1; n <= count; n++ {
		if got[n] == 0 {
			t.Errorf("occurrence %d never delivered", n)
		}
	}
	for n := range got {
		if n < 1 || n > count {
			t.Errorf("occurrence %d delivered (delay-count %d)", n, count)
		}
	}
	for _, r := range out.Snapshot() {
		if e2etest.Header(r.Msg, payload.HeaderID) != e.Seq("r") {
			continue
		}
		n, _ := strconv.Atoi(e2etest.Header(r.Msg, payload.HeaderOccurrence))
		want := first.Add(time.Duration(n-1) * every)
		if at := e2etest.Header(r.Msg, payload.HeaderAt); at != payload.FormatTime(want.UnixMilli()) {
			t.Errorf("occurrence %d delay-at %s, want %s", n, at, payload.FormatTime(want.UnixMilli()))
		}
		if r.At.Before(want) {
			t.Errorf("occurrence %d delivered early: at %v, due %v", n, r.At, want)
		}
		if string(r.Msg.Value) != "tick" || string(r.Msg.Key) != "r" {
			t.Errorf("occurrence %d key %q value %q", n, r.Msg.Key, r.Msg.Value)
		}
	}
	t.Logf("TestRecurring: %d occurrences of %d delivered, %d duplicates (all after the kill -9): %v",
		len(got), count, dups(got), got)

	cancelled := occ("c")
	if cancelled[1] == 0 || cancelled[2] == 0 || len(cancelled) != 2 {
		t.Errorf("series cancelled at its third occurrence delivered %v, want occurrences 1 and 2", cancelled)
	}
	if byID := occ("b"); len(byID) != 1 || byID[1] != 1 {
		t.Errorf("series cancelled by id after its first occurrence delivered %v, want occurrence 1 once", byID)
	}
}

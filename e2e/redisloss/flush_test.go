package redisloss

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/payload"
)

const (
	lookback = 30 * time.Second // delayd --repair-lookback
	// dupWindow is how far before a loss a task may fall due and be
	// delivered twice: delayd looks at the index every second
	// (--repair-interval) and cannot tell tasks recorded in the 3 s before
	// its look (repair.DefaultMargin); the rest is slack for a loaded
	// machine.
	dupWindow = 10 * time.Second
)

// TestFlushAll is must-show 3 of issue 27 at a small scale: 3,000 tasks
// pending over the next 20-90 s (a tenth cancelled by id, a tenth
// rescheduled, both before the loss), 100 more whose cancel by id comes
// before the loss and the task after it, 20 series (every 4 s, 15
// occurrences), and a steady outside input (400 tasks/s, delays 0-30 s,
// 3 % cancelled) running throughout. The Redis index is flushed 12 s in;
// 45 s in, Redis is killed -9 and started again without its data
// directory. delayd repairs the index by itself each time: no task is
// lost, none is early, no cancelled task is delivered, a rescheduled one
// only at its new time, every occurrence of a series once, every task
// within the repair's time of its due time; a task is delivered twice
// only if it fell due in the seconds before a loss (dupWindow).
func TestFlushAll(t *testing.T) {
	e, d, rdb := start(t)

	steady := e.NewPhase(t, "steady", []*e2etest.Delayd{d})
	topic := e.Topic("backlog")
	out := e.Collect(topic)
	n, span := scale(t)
	l, tasks, ops, after := backlog(e, topic, n, span, time.Now())
	seriesTopic := e.Topic("series")
	seriesOut := e.Collect(seriesTopic)
	e.Produce(t.Context(), series(e, seriesTopic, time.Now()))
	e.Produce(t.Context(), tasks)
	time.Sleep(2 * time.Second)
	e.Produce(t.Context(), ops)
	steady.At(12 * time.Second)

	flushed := time.Now()
	if err := rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	// The tasks whose cancel by id came before the loss arrive after it:
	// their op flags went with the index.
	e.Produce(t.Context(), after)
	healed := waitHealed(t, rdb, e.Run, flushed)
	t.Logf("FLUSHALL at %s; index repaired %v later (%s)", flushed.Format("15:04:05.000"), healed.Sub(flushed).Round(time.Millisecond), metrics(t, d))

	// The second loss: Redis killed -9 and started again without its data
	// directory.
	steady.At(45 * time.Second)
	killed := time.Now()
	if _, err := private.Cmd("stop", "--kill", "redis"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(private.Dir(), "redis")); err != nil {
		t.Fatal(err)
	}
	if _, err := private.Cmd("start", "redis"); err != nil {
		t.Fatal(err)
	}
	rewiped := waitHealed(t, rdb, e.Run, killed)
	t.Logf("Redis killed -9 at %s, started without its data directory; index repaired %v after the kill (%s)",
		killed.Format("15:04:05.000"), rewiped.Sub(killed).Round(time.Millisecond), metrics(t, d))

	o := steady.Finish()
	lastDue := time.Time{}
	for _, due := range l.Due {
		if due.At.After(lastDue) {
			lastDue = due.At
		}
	}
	e2etest.WaitFor(t, time.Until(lastDue.Add(60*time.Second)), "every backlog task delivered", func() bool {
		return l.Judge(out.Snapshot()).Lost == 0
	})
	time.Sleep(3 * time.Second)
	rep := l.Judge(out.Snapshot())
	t.Logf("backlog: accepted=%d cancelled=%d delivered=%d lost=%d duplicates=%d early=%d cancelled_delivered=%d lateness p50=%v p99=%v max=%v",
		rep.Accepted, len(l.Cancelled), rep.Delivered, rep.Lost, rep.Duplicates, rep.Early, rep.CancelledDelivered,
		e2etest.Ms(e2etest.Percentile(rep.Lateness, 0.5)), e2etest.Ms(e2etest.Percentile(rep.Lateness, 0.99)), e2etest.Ms(e2etest.Percentile(rep.Lateness, 1)))
	if rep.Lost != 0 || rep.Early != 0 || rep.CancelledDelivered != 0 || rep.Unknown != 0 {
		t.Errorf("backlog: %d lost (%v), %d early, %d cancelled delivered (%v), %d unknown",
			rep.Lost, rep.LostSeqs, rep.Early, rep.CancelledDelivered, rep.CancelledSeqs, rep.Unknown)
	}
	windows := []window{{flushed.Add(-dupWindow), healed}, {killed.Add(-dupWindow), rewiped}}
	if _, outside := duplicates(l, out.Snapshot(), windows); len(outside) > 0 {
		t.Errorf("backlog: %d duplicates due outside [loss - %v, repaired]: %v", len(outside), dupWindow, outside)
	}
	if late, took := e2etest.Percentile(rep.Lateness, 1), max(healed.Sub(flushed), rewiped.Sub(killed)); late > took+5*time.Second {
		t.Errorf("a backlog task was delivered %v late; the longest loss took %v to repair", late, took)
	}

	e2etest.WaitFor(t, time.Until(seriesEnd.Add(30*time.Second)), "every occurrence of every series delivered", func() bool {
		return len(occurrences(e, seriesOut.Snapshot())) == seriesN*seriesCount
	})
	time.Sleep(3 * time.Second)
	for occ, n := range occurrences(e, seriesOut.Snapshot()) {
		if n != 1 {
			t.Errorf("series %s occurrence %d delivered %d times, want once", occ.name, occ.n, n)
		}
	}
	got := occurrences(e, seriesOut.Snapshot())
	if len(got) != seriesN*seriesCount {
		t.Errorf("%d occurrences of %d series delivered, want %d", len(got), seriesN, seriesN*seriesCount)
	}
	t.Logf("series: %d occurrences of %d series delivered (each must be once), the last due %v after the flush",
		len(got), seriesN, seriesEnd.Sub(flushed).Round(time.Second))

	steady.Summary(o, "")
	steady.Check(o, true)
	dups, outside := duplicates(o.Ledger, steady.Out.Snapshot(), windows)
	t.Logf("steady input: %d duplicate deliveries; %d due outside [loss - %v, repaired]", dups, len(outside), dupWindow)
	if len(outside) > 0 {
		t.Errorf("%d duplicates due outside [loss - %v, repaired]: %v", len(outside), dupWindow, outside)
	}
}

// The series: seriesN tasks every seriesEvery, seriesCount occurrences
// each, the first 5 s after they are sent: they run across the flush.
const (
	seriesN     = 20
	seriesEvery = 4 * time.Second
	seriesCount = 15
)

var seriesEnd time.Time // the last occurrence's due time

func series(e *e2etest.Env, topic string, now time.Time) []kafka.Message {
	first := now.Add(5 * time.Second).Truncate(time.Millisecond)
	seriesEnd = first.Add((seriesCount - 1) * seriesEvery)
	var msgs []kafka.Message
	for i := range seriesN {
		name := e.Seq("series-" + strconv.Itoa(i))
		msgs = append(msgs, kafka.Message{Key: []byte(name), Value: []byte(name), Headers: []kafka.Header{
			{Key: payload.HeaderTopic, Value: []byte(topic)},
			{Key: payload.HeaderID, Value: []byte(name)},
			{Key: payload.HeaderAt, Value: []byte(first.UTC().Format(time.RFC3339Nano))},
			{Key: payload.HeaderEvery, Value: []byte(seriesEvery.String())},
			{Key: payload.HeaderCount, Value: []byte(strconv.Itoa(seriesCount))},
		}})
	}
	return msgs
}

type occurrence struct {
	name string
	n    int
}

// occurrences counts the deliveries of each occurrence of the series.
func occurrences(e *e2etest.Env, got []e2etest.Received) map[occurrence]int {
	out := map[occurrence]int{}
	for _, r := range got {
		n, _ := strconv.Atoi(e2etest.Header(r.Msg, payload.HeaderOccurrence))
		out[occurrence{e2etest.Header(r.Msg, payload.HeaderID), n}]++
	}
	return out
}

// scale returns the backlog's size and spread: 3,000 tasks over 70 s, or
// $DELAYQ_REDISLOSS_TASKS over $DELAYQ_REDISLOSS_SPAN (make redisloss-large:
// 200,000 over 10 minutes).
func scale(t *testing.T) (int, time.Duration) {
	n, span := 3000, 70*time.Second
	if v := os.Getenv("DELAYQ_REDISLOSS_TASKS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("DELAYQ_REDISLOSS_TASKS: %v", err)
		}
	}
	if v := os.Getenv("DELAYQ_REDISLOSS_SPAN"); v != "" {
		var err error
		if span, err = time.ParseDuration(v); err != nil {
			t.Fatalf("DELAYQ_REDISLOSS_SPAN: %v", err)
		}
	}
	return n, span
}

// backlog builds n tasks of topic due 20 s to 20 s + span after now: a tenth cancelled
// by id alone and a tenth rescheduled 5-20 s later by the ops, which are
// produced after the tasks; and 100 tasks (after) whose cancel by id is
// among the ops, before its task.
func backlog(e *e2etest.Env, topic string, n int, span time.Duration, now time.Time) (l e2etest.Ledger, tasks, ops, after []kafka.Message) {
	l = e2etest.NewLedger()
	now = now.Truncate(time.Millisecond)
	rng := rand.New(rand.NewPCG(uint64(now.UnixNano()), 27))
	sec := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second)).Truncate(time.Millisecond)
	}
	op := func(key []byte, seq, id, kind string, at time.Time) kafka.Message {
		hs := []kafka.Header{
			{Key: payload.HeaderOp, Value: []byte(kind)},
			{Key: payload.HeaderID, Value: []byte(id)},
			{Key: "seq", Value: []byte(seq)},
		}
		if !at.IsZero() {
			hs = append(hs, kafka.Header{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(at.UnixMilli(), 10))})
		}
		return kafka.Message{Key: key, Time: now, Headers: hs}
	}
	for i := range n + 100 {
		seq, id := e.Seq(strconv.Itoa(i)), fmt.Sprintf("%s-%d", e.Run, i)
		at := now.Add(20*time.Second + sec(0, span.Seconds()))
		task := e2etest.TaskMessage(topic, seq, id, now, at, i)
		switch {
		case i >= n:
			l.Cancelled[seq] = true
			l.Cancels[e2etest.CancelSeq(seq)] = true
			ops = append(ops, op(task.Key, e2etest.CancelSeq(seq), id, payload.OpCancel, time.Time{}))
			after = append(after, task)
			continue
		case i%10 == 0:
			l.Cancelled[seq] = true
			l.Cancels[e2etest.CancelSeq(seq)] = true
			ops = append(ops, op(task.Key, e2etest.CancelSeq(seq), id, payload.OpCancel, time.Time{}))
		case i%10 == 1:
			to := at.Add(sec(5, 20))
			l.Cancels[seq+"/reschedule"] = true
			l.Due[seq] = e2etest.Due{At: to}
			ops = append(ops, op(task.Key, seq+"/reschedule", id, payload.OpReschedule, to))
		default:
			l.Due[seq] = e2etest.Due{At: at}
		}
		tasks = append(tasks, task)
	}
	return l, tasks, ops, after
}

// waitHealed waits until the generation marker of prefix records a
// repair completed after the loss at lost and no loss since, and returns
// when that repair completed.
func waitHealed(t *testing.T, rdb *redis.Client, prefix string, lost time.Time) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		h, err := rdb.HGetAll(ctx, prefix+":generation").Result()
		since, _ := strconv.ParseInt(h["since"], 10, 64)
		if err == nil && h["id"] != "" && h["lost"] == "" && since > lost.UnixMilli() {
			return time.UnixMilli(since)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("index not repaired %v after the loss (marker %v, %v)", time.Since(lost), h, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// metrics returns delayd's repair metrics, one "name value" each.
func metrics(t *testing.T, d *e2etest.Delayd) string {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTP + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "delayq_repair_") && !strings.Contains(line, "_bucket") {
			out = append(out, line)
		}
	}
	return strings.Join(out, ", ")
}

type window struct{ from, to time.Time }

// duplicates counts the deliveries beyond the first of l's tasks in got
// and returns the seqs of those due outside every window.
func duplicates(l e2etest.Ledger, got []e2etest.Received, ws []window) (n int, outside []string) {
	seen := map[string]int{}
	for _, g := range got {
		seq := e2etest.Header(g.Msg, "seq")
		if seen[seq]++; seen[seq] != 2 {
			continue
		}
		due, ok := l.Due[seq]
		if !ok {
			continue
		}
		in := false
		for _, w := range ws {
			in = in || !due.At.Before(w.from) && !due.At.After(w.to)
		}
		if !in {
			outside = append(outside, fmt.Sprintf("%s due %s", seq, due.At.Format("15:04:05.000")))
		}
	}
	for _, c := range seen {
		n += max(c-1, 0)
	}
	return n, outside
}

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// TestLifecycle: 10,000 tasks due 15–35 s ahead, of which 1,000 are
// cancelled by id alone (a fifth of the cancels produced before their
// task) and 1,000 rescheduled by id (later, earlier, twice, and 100 whose
// reschedule is produced before their task, half of those tasks on
// delay-input-slow): nothing lost, no cancelled task delivered, every
// rescheduled task delivered once, at its new time (its delay-at header
// and no delivery before it). A reschedule of an unknown id goes to
// delay-failed with its reason; no valid cancel or reschedule does.
func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	e.Start("d0")
	runLifecycle(t, e, 10000)
}

// TestEmbeddedLifecycle: TestLifecycle's scenario with 2,000 tasks on
// `delayd --embedded` (the in-memory store and miniredis keep id rows and
// op flags too).
func TestEmbeddedLifecycle(t *testing.T) {
	e := embeddedEnv(t)
	runLifecycle(t, e, 2000)
}

// runLifecycle submits n tasks to a running delayd on e: a tenth cancelled
// by id alone, a tenth rescheduled (see TestLifecycle), and judges.
func runLifecycle(t *testing.T, e *e2etest.Env, n int) {
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	var (
		cancels = n / 10
		moves   = n / 10
		raced   = n / 100 // reschedules produced before their task
		twice   = n / 50
	)
	now := time.Now().Truncate(time.Millisecond)
	rng := rand.New(rand.NewPCG(uint64(now.UnixNano()), 15))
	sec := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second)).Truncate(time.Millisecond)
	}
	l := e2etest.NewLedger()
	moved := map[string]time.Time{} // seq → final due time
	var early, tasks, late []kafka.Message
	perm := rng.Perm(n)
	for k, i := range perm {
		seq, id := e.Seq(strconv.Itoa(i)), fmt.Sprintf("%s-%d", e.Run, i)
		at := now.Add(15*time.Second + sec(0, 20))
		task := e2etest.TaskMessage(topic, seq, id, now, at, i)
		key := task.Key
		switch {
		case k < cancels:
			l.Cancelled[seq] = true
			l.Cancels[e2etest.CancelSeq(seq)] = true
			c := kafka.Message{Key: key, Time: now, Headers: []kafka.Header{
				{Key: payload.HeaderOp, Value: []byte(payload.OpCancel)},
				{Key: payload.HeaderID, Value: []byte(id)},
				{Key: "seq", Value: []byte(e2etest.CancelSeq(seq))},
			}}
			if k < cancels/5 {
				early = append(early, c)
			} else {
				late = append(late, c)
			}
		case k < cancels+moves:
			j := k - cancels
			resched := func(to time.Time, n int) kafka.Message {
				s := seq + "/reschedule-" + strconv.Itoa(n)
				l.Cancels[s] = true // never in delay-failed
				return kafka.Message{Key: key, Time: now, Headers: []kafka.Header{
					{Key: payload.HeaderOp, Value: []byte(payload.OpReschedule)},
					{Key: payload.HeaderID, Value: []byte(id)},
					{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(to.UnixMilli(), 10))},
					{Key: "seq", Value: []byte(s)},
				}}
			}
			later := at.Add(sec(2, 10))
			earlier := at.Add(-sec(2, 8))
			if floor := now.Add(8 * time.Second); earlier.Before(floor) {
				earlier = floor
			}
			switch {
			case j < raced:
				moved[seq] = later
				early = append(early, resched(later, 1))
				if j%2 == 1 {
					task.Topic = topics.Slow
				}
			case j < raced+twice:
				first, second := later, earlier
				if j%2 == 1 {
					first, second = earlier, later
				}
				moved[seq] = second
				late = append(late, resched(first, 1), resched(second, 2))
			case j%2 == 0:
				moved[seq] = later
				late = append(late, resched(later, 1))
			default:
				moved[seq] = earlier
				late = append(late, resched(earlier, 1))
			}
			l.Due[seq] = e2etest.Due{At: moved[seq]}
		default:
			l.Due[seq] = e2etest.Due{At: at}
		}
		tasks = append(tasks, task)
	}
	// A reschedule of an id no task has, older than the grace period.
	unknown := e.Seq("unknown-reschedule")
	l.Malformed[unknown] = true
	late = append(late, kafka.Message{Key: []byte(unknown), Value: []byte("bad payload " + unknown), Time: now.Add(-time.Minute), Headers: []kafka.Header{
		{Key: payload.HeaderOp, Value: []byte(payload.OpReschedule)},
		{Key: payload.HeaderID, Value: []byte(e.Run + "-nobody")},
		{Key: payload.HeaderAfter, Value: []byte("1h")},
		{Key: "seq", Value: []byte(unknown)},
	}})

	ctx := context.Background()
	start := time.Now()
	e.Produce(ctx, early)
	e.Produce(ctx, tasks)
	e.Produce(ctx, late)
	t.Logf("produced %d tasks, %d cancels by id (%d before their task), %d reschedules of %d tasks (%d before their task) in %v",
		len(tasks), cancels, cancels/5, moves+twice, moves, raced, time.Since(start).Round(time.Millisecond))

	r := awaitDelivery(l, out, 120*time.Second)
	t.Logf("%s: %v", t.Name(), r)
	mustBeClean(t, r)
	if r.Delivered != len(l.Due) {
		t.Errorf("delivered %d of %d", r.Delivered, len(l.Due))
	}
	var wrongTime []string
	for _, g := range out.Snapshot() {
		seq := e2etest.Header(g.Msg, "seq")
		to, ok := moved[seq]
		if !ok {
			continue
		}
		if got := e2etest.Header(g.Msg, payload.HeaderAt); got != payload.FormatTime(to.UnixMilli()) {
			wrongTime = append(wrongTime, fmt.Sprintf("%s: delay-at %s, want %s", seq, got, payload.FormatTime(to.UnixMilli())))
		}
	}
	if len(wrongTime) > 0 {
		t.Errorf("%d rescheduled tasks delivered at another time, e.g. %s", len(wrongTime), strings.Join(wrongTime[:min(5, len(wrongTime))], "; "))
	}
	checkFailed(t, l, failed)
	f := l.JudgeFailed(failed.Snapshot())
	if reason := f.Malformed[unknown]; !strings.Contains(reason, "unknown delay-id") {
		t.Errorf("reschedule of an unknown id: delay-error %q, want it to name the unknown id", reason)
	}
}

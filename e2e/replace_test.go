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

// TestReplace: n tasks due 15–35 s ahead, a quarter of them replaced by
// id (new value, headers and due time: later, earlier or the same; a
// fifth of those replaces produced before their task, with a later record
// time; a tenth followed by a reschedule of the new task), replaces of
// ids never submitted (they act as submits) and replaces of ids cancelled
// by id alone first (delay-failed with the reason): no replaced task is
// delivered, every new one once, at its time (its delay-at) with its
// value, and no valid replace goes to delay-failed.
func TestReplace(t *testing.T) {
	e := newEnv(t)
	e.Start("d0")
	runReplace(t, e, 800)
}

// TestEmbeddedReplace: TestReplace's scenario on `delayd --embedded`.
func TestEmbeddedReplace(t *testing.T) {
	runReplace(t, embeddedEnv(t), 400)
}

// replaceMessage is the replace of id by task seq: task's message with
// delay-op: replace, recorded at rec.
func replaceMessage(topic, seq, id string, rec, at time.Time) kafka.Message {
	m := e2etest.TaskMessage(topic, seq, id, rec, at, 1)
	m.Headers = append(m.Headers, kafka.Header{Key: payload.HeaderOp, Value: []byte(payload.OpReplace)})
	return m
}

func runReplace(t *testing.T, e *e2etest.Env, n int) {
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	now := time.Now().Truncate(time.Millisecond)
	rng := rand.New(rand.NewPCG(uint64(now.UnixNano()), 28))
	sec := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second)).Truncate(time.Millisecond)
	}
	l := e2etest.NewLedger()
	final := map[string]time.Time{} // seq of a replace → its task's due time
	var early, tasks, late []kafka.Message
	replaced := n / 4
	for i := range n {
		seq, id := e.Seq(strconv.Itoa(i)), fmt.Sprintf("%s-%d", e.Run, i)
		at := now.Add(15*time.Second + sec(0, 20))
		tasks = append(tasks, e2etest.TaskMessage(topic, seq, id, now, at, i))
		if i >= replaced {
			l.Due[seq] = e2etest.Due{At: at}
			continue
		}
		l.Cancelled[seq] = true
		rseq := seq + "/replace"
		to := at
		switch i % 3 {
		case 0:
			to = at.Add(sec(2, 10))
		case 1:
			to = at.Add(-sec(2, 8))
			if floor := now.Add(10 * time.Second); to.Before(floor) {
				to = floor
			}
		}
		r := replaceMessage(topic, rseq, id, now.Add(time.Millisecond), to)
		if i%10 == 9 { // then moved by a reschedule of the new task
			to = to.Add(sec(1, 5))
			s := rseq + "/reschedule"
			l.Cancels[s] = true
			late = append(late, kafka.Message{Key: r.Key, Time: now.Add(2 * time.Millisecond), Headers: []kafka.Header{
				{Key: payload.HeaderOp, Value: []byte(payload.OpReschedule)},
				{Key: payload.HeaderID, Value: []byte(id)},
				{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(to.UnixMilli(), 10))},
				{Key: "seq", Value: []byte(s)},
			}})
		}
		l.Due[rseq], final[rseq] = e2etest.Due{At: to}, to
		if i%5 == 0 {
			early = append(early, r)
		} else {
			late = append(late, r)
		}
	}
	for i := range n / 20 {
		// A replace of an id never submitted: a submit.
		seq := e.Seq("new-" + strconv.Itoa(i))
		at := now.Add(15*time.Second + sec(0, 20))
		l.Due[seq], final[seq] = e2etest.Due{At: at}, at
		late = append(late, replaceMessage(topic, seq, fmt.Sprintf("%s-new-%d", e.Run, i), now, at))
		// A replace of an id cancelled by id alone before it: refused.
		cseq, rseq, id := e.Seq("cancelled-"+strconv.Itoa(i)), e.Seq("cancelled-replace-"+strconv.Itoa(i)), fmt.Sprintf("%s-cancelled-%d", e.Run, i)
		l.Cancels[cseq], l.Malformed[rseq] = true, true
		late = append(late, kafka.Message{Key: []byte(rseq), Time: now, Headers: []kafka.Header{
			{Key: payload.HeaderOp, Value: []byte(payload.OpCancel)},
			{Key: payload.HeaderID, Value: []byte(id)},
			{Key: "seq", Value: []byte(cseq)},
		}})
		r := replaceMessage(topic, rseq, id, now.Add(time.Millisecond), at)
		r.Key, r.Value = []byte(rseq), []byte("bad payload "+rseq) // same partition as its cancel
		late = append(late, r)
	}

	ctx := context.Background()
	e.Produce(ctx, early)
	e.Produce(ctx, tasks)
	e.Produce(ctx, late)
	t.Logf("produced %d tasks, %d replaces (%d before their task), %d replaces of new ids, %d of cancelled ids",
		len(tasks), replaced, len(early), n/20, n/20)

	r := awaitDelivery(l, out, 120*time.Second)
	t.Logf("%s: %v", t.Name(), r)
	mustBeClean(t, r)
	if r.Delivered != len(l.Due) {
		t.Errorf("delivered %d of %d", r.Delivered, len(l.Due))
	}
	var wrong []string
	for _, g := range out.Snapshot() {
		seq := e2etest.Header(g.Msg, "seq")
		to, ok := final[seq]
		if !ok {
			continue
		}
		if got := e2etest.Header(g.Msg, payload.HeaderAt); got != payload.FormatTime(to.UnixMilli()) {
			wrong = append(wrong, fmt.Sprintf("%s: delay-at %s, want %s", seq, got, payload.FormatTime(to.UnixMilli())))
		}
		if string(g.Msg.Value) != "payload-"+seq {
			wrong = append(wrong, fmt.Sprintf("%s: value %q, want the replace's", seq, g.Msg.Value))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d replaced tasks delivered wrong, e.g. %s", len(wrong), strings.Join(wrong[:min(5, len(wrong))], "; "))
	}
	checkFailed(t, l, failed)
	for seq, reason := range l.JudgeFailed(failed.Snapshot()).Malformed {
		if !strings.HasPrefix(reason, "id cancelled: replace of delay-id") {
			t.Errorf("%s: delay-error %q, want the replace of a cancelled id refused", seq, reason)
		}
	}
}

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// TestGhostReschedule: a reschedule of an id never submitted
// (delay-after: 1h) goes to delay-failed, with its reason, when its grace
// (30 s) ends, though ingest read it young; a submit of the id 45 s after
// it, due 5 s later, is delivered at its own time, not moved by an hour.
func TestGhostReschedule(t *testing.T) {
	e := newEnv(t)
	e.Start("d0")
	runGhost(t, e)
}

// TestEmbeddedGhostReschedule: TestGhostReschedule on `delayd --embedded`.
func TestEmbeddedGhostReschedule(t *testing.T) {
	runGhost(t, embeddedEnv(t))
}

func runGhost(t *testing.T, e *e2etest.Env) {
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	e2etest.WaitFor(t, 30*time.Second, "delay-input to exist", func() bool {
		return admin.Ensure(context.Background(), e.Brokers, nil, []admin.Spec{{Name: topics.Input}}) == nil
	})
	id, seq := e.Run+"-ghost", e.Seq("ghost-reschedule")
	sent := time.Now().Truncate(time.Millisecond)
	e.Produce(t.Context(), []kafka.Message{{Key: []byte(seq), Value: []byte("bad payload " + seq), Time: sent, Headers: []kafka.Header{
		{Key: payload.HeaderOp, Value: []byte(payload.OpReschedule)},
		{Key: payload.HeaderID, Value: []byte(id)},
		{Key: payload.HeaderAfter, Value: []byte("1h")},
		{Key: "seq", Value: []byte(seq)},
	}}})

	var got *e2etest.Received
	e2etest.WaitFor(t, 90*time.Second, "the ghost reschedule in delay-failed", func() bool {
		for _, g := range failed.Snapshot() {
			if e2etest.Header(g.Msg, "seq") == seq {
				got = &g
				return true
			}
		}
		return false
	})
	after := got.At.Sub(sent)
	t.Logf("ghost reschedule in delay-failed %v after it was sent: %s", after.Round(time.Millisecond), e2etest.Header(got.Msg, payload.HeaderError))
	if after < 30*time.Second || after > 60*time.Second {
		t.Errorf("ghost reschedule failed %v after it was sent, want after its 30 s grace and soon after", after)
	}
	if reason := e2etest.Header(got.Msg, payload.HeaderError); !strings.Contains(reason, `unknown delay-id "`+id+`"`) {
		t.Errorf("delay-error %q, want it to name the unknown id", reason)
	}
	if string(got.Msg.Value) != "bad payload "+seq || string(got.Msg.Key) != seq {
		t.Errorf("failed message key %q value %q, want the reschedule's", got.Msg.Key, got.Msg.Value)
	}

	time.Sleep(time.Until(sent.Add(45 * time.Second)))
	sseq := e.Seq("ghost-submit")
	now := time.Now().Truncate(time.Millisecond)
	due := now.Add(5 * time.Second)
	e.Produce(t.Context(), []kafka.Message{e2etest.TaskMessage(topic, sseq, id, now, due, 1)})
	e2etest.WaitFor(t, 30*time.Second, "the later submit delivered", func() bool { return len(out.Snapshot()) > 0 })
	d := out.Snapshot()[0]
	if e2etest.Header(d.Msg, "seq") != sseq || e2etest.Header(d.Msg, payload.HeaderAt) != payload.FormatTime(due.UnixMilli()) {
		t.Errorf("delivered seq %s at delay-at %s, want %s at %s", e2etest.Header(d.Msg, "seq"), e2etest.Header(d.Msg, payload.HeaderAt),
			sseq, payload.FormatTime(due.UnixMilli()))
	}
	if late := d.At.Sub(due); late < 0 || late > 5*time.Second {
		t.Errorf("delivered %v after its due time, want on time", late)
	}
	if n := len(failed.Snapshot()); n != 1 {
		t.Errorf("%d messages in delay-failed, want only the ghost reschedule", n)
	}
}

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// stallStore is the in-memory store whose writes wait while stalled: an
// outage of HBase as ingest sees it (the scanner writes nothing for a task
// that does not recur, so only ingest stalls).
type stallStore struct {
	*payload.Memory
	stalled atomic.Bool
	stored  atomic.Int64 // task rows written, cancel markers aside
}

func (s *stallStore) wait(ctx context.Context) error {
	for s.stalled.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

func (s *stallStore) Put(ctx context.Context, tasks []payload.Task) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	if err := s.Memory.Put(ctx, tasks); err != nil {
		return err
	}
	for _, t := range tasks {
		if !t.Cancel {
			s.stored.Add(1)
		}
	}
	return nil
}

func (s *stallStore) PutIDs(ctx context.Context, writes []payload.IDWrite) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Memory.PutIDs(ctx, writes)
}

// TestEmbeddedRescheduleBehindStall: tasks due a few seconds ahead are
// stored, then ingest stalls (its store's writes wait) and a reschedule of
// each, to 4 s later, reaches delay-input 2.5 s or more before the task is
// due; the stall lasts until 1.5 s past that time, so ingest reads the
// reschedules only after their tasks were due. The scanner's hold keeps
// the tasks meanwhile, as it would keep them for a cancel: every task is
// delivered once, at its new time, and no reschedule goes to delay-failed
// (it did, "was due at …", and the task went out at its old time, before
// the fix: docs/faults.md).
func TestEmbeddedRescheduleBehindStall(t *testing.T) {
	st := &stallStore{Memory: payload.NewMemory()}
	e := embeddedEnvWith(t, daemon.Options{Store: st})
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	ctx := context.Background()
	const n, move = 20, 4 * time.Second

	// The reschedules must reach Kafka 2 s (the hold's lead) before their
	// tasks are due for the guarantee to cover them; a machine too busy
	// for that gets another round, later due times.
	for round, ahead := 0, 8*time.Second; ; round, ahead = round+1, ahead*2 {
		if round == 3 {
			t.Fatal("the reschedules never reached Kafka 2.5 s before their tasks were due: machine too busy")
		}
		l := e2etest.NewLedger()
		now := time.Now().Truncate(time.Millisecond)
		due := now.Add(ahead)
		var tasks, resched []kafka.Message
		for i := range n {
			seq, id := e.Seq(fmt.Sprintf("r%d-%d", round, i)), fmt.Sprintf("%s-r%d-%d", e.Run, round, i)
			tasks = append(tasks, e2etest.TaskMessage(topic, seq, id, now, due, 1))
			rs := seq + "/reschedule"
			resched = append(resched, kafka.Message{Key: []byte("k" + seq), Headers: []kafka.Header{
				{Key: payload.HeaderOp, Value: []byte(payload.OpReschedule)},
				{Key: payload.HeaderID, Value: []byte(id)},
				{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(due.Add(move).UnixMilli(), 10))},
				{Key: "seq", Value: []byte(rs)},
			}})
			l.Due[seq], l.Cancels[rs] = e2etest.Due{At: due.Add(move)}, true
		}
		before, delivered := st.stored.Load(), out.Len()
		e.Produce(ctx, tasks)
		e2etest.WaitFor(t, ahead, "the tasks stored", func() bool { return st.stored.Load() >= before+n })
		st.stalled.Store(true)
		e.Produce(ctx, resched) // record time: now
		if left := time.Until(due); left < 2500*time.Millisecond {
			st.stalled.Store(false)
			t.Logf("round %d: the reschedules reached Kafka %v before their tasks were due; again, later", round, e2etest.Ms(left))
			awaitDelivery(l, out, ahead+move+30*time.Second) // this round's tasks out of the way
			continue
		}
		time.Sleep(time.Until(due.Add(1500 * time.Millisecond)))
		if got := out.Len() - delivered; got != 0 {
			t.Errorf("%d deliveries during the stall, want none (the hold)", got)
		}
		st.stalled.Store(false)
		t.Logf("round %d: ingest stalled until 1.5 s after the tasks were due, with %d reschedules queued", round, n)

		r := awaitDelivery(l, out, move+30*time.Second)
		t.Logf("%s: %v", t.Name(), r)
		mustBeClean(t, r)
		if r.Delivered != n {
			t.Errorf("delivered %d of %d", r.Delivered, n)
		}
		for _, g := range out.Snapshot() {
			seq := e2etest.Header(g.Msg, "seq")
			if _, ours := l.Due[seq]; !ours {
				continue // an earlier round's
			}
			if at := e2etest.Header(g.Msg, payload.HeaderAt); at != payload.FormatTime(due.Add(move).UnixMilli()) {
				t.Errorf("%s delivered with delay-at %s, want the reschedule's %s", seq, at, payload.FormatTime(due.Add(move).UnixMilli()))
				break
			}
		}
		for _, p := range l.JudgeFailed(failed.Snapshot()).Problems(l) {
			t.Error(p)
		}
		return
	}
}

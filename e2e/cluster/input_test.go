package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/topics"
)

// Shape of the steady input.
const (
	batchEvery   = 100 * time.Millisecond
	minDelay     = 3 * time.Second  // every task is accepted before it is due
	delaySpan    = 17 * time.Second // delays are uniform over [minDelay, minDelay+delaySpan)
	cancelEvery  = 40               // one task in cancelEvery is cancelled
	cancelMargin = 10 * time.Second // a cancelled task is due at least this late
)

// input produces tasks to delay-input at a steady rate, as an outside
// client would, and keeps the ledger of what Kafka accepted. A batch Kafka
// did not take is written again until it is (the stream pauses meanwhile).
type input struct {
	e     *e2etest.Env
	topic string

	mu      sync.Mutex
	ledger  e2etest.Ledger
	retries int // failed WriteMessages calls
}

// produce writes rate tasks/s for d, then returns the ledger. Every
// cancelEvery-th task is cancelled in the same batch, its cancel written
// before the task for odd ones and after it for even ones; every tenth
// uncancelled task has no delay-id (its id comes from its input offset).
func produce(ctx context.Context, e *e2etest.Env, topic string, rate int, d time.Duration) *input {
	in := &input{e: e, topic: topic, ledger: e2etest.NewLedger()}
	w := producer.New(producer.Config{Brokers: e.Brokers})
	defer w.Close()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 12))
	tick := time.NewTicker(batchEvery)
	defer tick.Stop()
	perBatch := max(1, rate*int(batchEvery/time.Millisecond)/1000)
	end := time.Now().Add(d)
	n := 0
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return in
		case <-tick.C:
		}
		now := time.Now().Truncate(time.Millisecond)
		var batch []kafka.Message
		due := map[string]time.Time{}
		cancelled := map[string]bool{}
		for range perBatch {
			i := n
			n++
			seq := e.Seq(strconv.Itoa(i))
			delay := minDelay + time.Duration(rng.Int64N(int64(delaySpan))).Truncate(time.Millisecond)
			id := fmt.Sprintf("%s-%d", e.Run, i)
			if i%cancelEvery != cancelEvery-1 {
				if i%10 == 9 {
					id = ""
				}
				execAt := now.Add(delay)
				batch = append(batch, e2etest.TaskMessage(in.topic, seq, id, now, execAt, i))
				due[seq] = execAt
				continue
			}
			execAt := now.Add(max(delay, cancelMargin))
			task := e2etest.TaskMessage(in.topic, seq, id, now, execAt, i)
			cancel := e2etest.CancelMessage(in.topic, seq, id, execAt, now)
			if i%2 == 1 {
				batch = append(batch, cancel, task)
			} else {
				batch = append(batch, task, cancel)
			}
			cancelled[seq] = true
		}
		for i := range batch {
			batch[i].Topic = topics.Input
		}
		for {
			err := w.WriteMessages(ctx, batch...)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return in
			}
			in.mu.Lock()
			in.retries++
			in.mu.Unlock()
			time.Sleep(200 * time.Millisecond)
		}
		accepted := time.Now()
		in.mu.Lock()
		for seq, at := range due {
			in.ledger.Due[seq] = e2etest.Due{At: at, Accepted: accepted}
		}
		for seq := range cancelled {
			in.ledger.Cancelled[seq] = true
			in.ledger.Cancels[e2etest.CancelSeq(seq)] = true
		}
		in.mu.Unlock()
	}
	return in
}

// Ledger returns a copy of what was accepted so far.
func (in *input) Ledger() e2etest.Ledger {
	in.mu.Lock()
	defer in.mu.Unlock()
	l := e2etest.NewLedger()
	for k, v := range in.ledger.Due {
		l.Due[k] = v
	}
	for k := range in.ledger.Cancelled {
		l.Cancelled[k] = true
	}
	for k := range in.ledger.Cancels {
		l.Cancels[k] = true
	}
	return l
}

// lastDue is the latest due time of the ledger's tasks.
func lastDue(l e2etest.Ledger) time.Time {
	var last time.Time
	for _, d := range l.Due {
		if d.At.After(last) {
			last = d.At
		}
	}
	return last
}

// duplicatesBefore counts the second and later deliveries of a task that
// delayd produced before t.
func duplicatesBefore(got []e2etest.Received, t time.Time) int {
	seen := map[string]int{}
	n := 0
	for _, g := range got {
		seq := e2etest.Header(g.Msg, "seq")
		seen[seq]++
		if seen[seq] > 1 && g.Msg.Time.Before(t) {
			n++
		}
	}
	return n
}

package scanner

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/drain"
	"github.com/delayq/delayq/zset"
)

// maxAlone caps the parked deliveries a worker writes in one round.
const maxAlone = 64

// parkHeap orders parked deliveries by their next attempt.
type parkHeap []*delivery

func (h parkHeap) Len() int           { return len(h) }
func (h parkHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h parkHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *parkHeap) Push(x any) { d := x.(*delivery); d.index = len(*h); *h = append(*h, d) }
func (h *parkHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	d.index = -1
	return d
}

// park holds d aside until at. A delivery whose write failed while others
// were written, or for a reason of its own (too large, unknown or invalid
// topic), is parked: its worker writes it again alone, through the single writer (one message
// per produce request, so the broker's answer is about it), on a schedule
// of its own: at once after the batch write, then with capped backoff.
// Parked deliveries are off the step's critical path: the worker goes on
// stepping its zsets, and a read of a zset skips its parked entries. A
// parked delivery is judged alone:
//
//   - written: its entry is settled.
//   - refused (a permanent error, or "unknown topic" MaxAttempts times): it
//     is redirected to FailedTopic, then stripped when FailedTopic refuses
//     it too, then dropped with an ERROR line; each form is written alone
//     at once.
//   - anything else (an outage, a leader moving, delayd not authorized to
//     write the topic): written again later.
//
// Its scan task does not wait for it: the entry stays in its zset until
// the delivery settles, so a crash or a stop leaves it for the next scan of
// the zset (the dispatcher emits one every tick while the zset holds due
// entries).
func (sd *sender) park(d *delivery, at time.Time) {
	z := d.entry.z
	if z.parked == nil {
		z.parked = make(map[zset.Entry]bool)
	}
	z.parked[d.entry.Entry] = true
	d.next = at
	heap.Push(&sd.parked, d)
	sd.s.m.parked.Inc()
}

// parkedWake is when the next parked delivery is due (a first backoff
// from now when none is).
func (sd *sender) parkedWake() time.Time {
	if len(sd.parked) == 0 {
		return time.Now().Add(sd.s.cfg.Backoff.Delay(1))
	}
	return sd.parked[0].next
}

// retryParked writes the parked deliveries that are due, each alone (the
// sender's retry), and removes at once the entries they settle for zsets
// without a running scan task. It returns an error only when ctx ended
// first.
func (w *worker) retryParked(ctx context.Context) error {
	touched, err := w.out.retry(ctx)
	if err != nil {
		return err
	}
	var idle []*zsetScan // no task: nothing else removes what settled
	for z := range touched {
		if len(z.tasks) == 0 {
			idle = append(idle, z)
		}
	}
	if err := w.remove(ctx, idle); err != nil {
		return err
	}
	for _, z := range idle {
		if z.idle() {
			delete(w.zsets, z.key)
		}
	}
	return nil
}

// retry writes the parked deliveries that are due, each alone, all at
// once, judges each by its own answer, and returns the zsets of those it
// wrote or judged. It returns an error only when ctx ended first.
func (sd *sender) retry(ctx context.Context) (map[*zsetScan]bool, error) {
	now := time.Now()
	var due []*delivery
	for len(sd.parked) > 0 && !sd.parked[0].next.After(now) && len(due) < maxAlone {
		due = append(due, heap.Pop(&sd.parked).(*delivery))
	}
	sd.s.m.parked.Sub(float64(len(due)))

	errs := make([]error, len(due))
	wctx, cancel := drain.Context(ctx, sd.s.cfg.writeGrace())
	var wg sync.WaitGroup
	for i, d := range due {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = write(wctx, sd.s.single, []*delivery{d}, now)[0]
		}()
	}
	wg.Wait()
	cancel()
	if err := ctx.Err(); err != nil {
		return nil, err // stopping: what is not settled stays in the index
	}

	at := time.Now()
	touched := make(map[*zsetScan]bool)
	for i, d := range due {
		touched[d.entry.z] = true
		if errs[i] == nil {
			sd.written(d, at)
			continue
		}
		sd.judge(d, errs[i], at)
	}
	return touched, nil
}

// judge decides what becomes of d after its alone write failed with err.
func (sd *sender) judge(d *delivery, err error, now time.Time) {
	d.attempts++
	refused := permanent(err)
	if !refused && !d.failed && errors.Is(err, kafka.UnknownTopicOrPartition) {
		// delayd creates FailedTopic, so there "unknown" stays transient.
		d.unknown++
		refused = d.unknown >= sd.s.cfg.MaxAttempts
	}
	if unauthorized(err) {
		sd.s.unauthorized(d, err)
	}
	switch {
	case !refused:
		sd.park(d, now.Add(sd.s.cfg.Backoff.Delay(d.attempts)))
	case !d.failed:
		sd.s.redirect(d, err.Error())
		sd.park(d, now)
	case !d.stripped:
		d.strip(err)
		sd.park(d, now)
	default:
		sd.s.m.failed.WithLabelValues(reasonUndeliverable).Inc()
		sd.s.log.Error("task dropped: failed topic refused it", "zset", d.entry.z.key, "id", d.task.Name,
			"topic", d.task.Topic, "exec_at", d.task.ExecAt, "err", err)
		d.entry.settle()
	}
}

// unauthorized logs, at missingLogRate lines a second, that d waits for
// an ACL: delayd's Kafka principal may not write its topic.
func (s *Scanner) unauthorized(d *delivery, err error) {
	s.m.unauthorized.Inc()
	if ok, suppressed := s.authLog.allow(time.Now()); ok {
		s.log.Warn("delivery waits: delayd is not authorized to write the topic (grant its Kafka principal WRITE and DESCRIBE on it)",
			"topic", d.task.Topic, "id", d.task.Name, "attempts", d.attempts, "suppressed", suppressed, "err", err)
	}
}

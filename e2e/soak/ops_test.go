//go:build soak

package soak

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// Shape of the ops stream.
const (
	opsEvery    = time.Second      // one reschedule and one replace
	seriesEvery = 10 * time.Second // one recurring series and one malformed message
	occurrences = 5
	occEvery    = 2 * time.Second
	// An op written later than this before its task is due may lose the
	// race with the delivery: not judged.
	opMargin = 3 * time.Second
)

// ops writes the soak's reschedules, replaces, recurring series and
// malformed messages beside the e2etest stream, with a ledger of its own.
type ops struct {
	e     *e2etest.Env
	topic string
	w     *kafka.Writer
	rng   *rand.Rand
	bad   [][]kafka.Header
	stop  chan struct{}
	done  chan struct{}

	mu     sync.Mutex
	ledger e2etest.Ledger
	due    map[string]time.Time
	series map[string]bool
	n      int
	doubts int // ops not judged (written after a retry or too late)
}

func startOps(e *e2etest.Env, topic string, seed uint64) *ops {
	o := &ops{
		e: e, topic: topic,
		w:      producer.New(producer.Config{Brokers: e.Brokers}),
		rng:    rand.New(rand.NewPCG(seed, 3)),
		bad:    e2etest.MalformedHeaders(topic),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		ledger: e2etest.NewLedger(),
		due:    map[string]time.Time{},
		series: map[string]bool{},
	}
	go o.run()
	return o
}

// Stop ends the stream after the op under way and returns its ledger,
// due times and series.
func (o *ops) Stop() (e2etest.Ledger, map[string]time.Time, map[string]bool, int) {
	close(o.stop)
	<-o.done
	o.w.Close()
	return o.ledger, o.due, o.series, o.doubts
}

func (o *ops) run() {
	defer close(o.done)
	tick := time.NewTicker(opsEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-o.stop:
			return
		case <-tick.C:
		}
		o.reschedule(i)
		o.replace(i)
		if i%int(seriesEvery/opsEvery) == 0 {
			o.recurring(i)
			o.malformed(i / int(seriesEvery/opsEvery))
		}
	}
}

func (o *ops) between(lo, hi time.Duration) time.Duration {
	return (lo + time.Duration(o.rng.Int64N(int64(hi-lo)))).Truncate(time.Millisecond)
}

func (o *ops) reschedule(i int) {
	now := time.Now().Truncate(time.Millisecond)
	seq, id := o.e.Seq("r"+strconv.Itoa(i)), o.e.Run+"-r"+strconv.Itoa(i)
	first, moved := now.Add(o.between(10*time.Second, 30*time.Second)), now.Add(o.between(5*time.Second, 30*time.Second))
	task := e2etest.TaskMessage(o.topic, seq, id, now, first, i)
	op := kafka.Message{Key: task.Key, Time: now, Headers: []kafka.Header{
		{Key: payload.HeaderOp, Value: []byte(payload.OpReschedule)},
		{Key: payload.HeaderID, Value: []byte(id)},
		{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(moved.UnixMilli(), 10))},
		{Key: "seq", Value: []byte(seq + resched)},
	}}
	batch := []kafka.Message{task, op}
	if i%2 == 1 {
		batch = []kafka.Message{op, task} // the reschedule first: it waits for its task
	}
	sure, _ := o.write(batch, minTime(first, moved))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.due[seq] = moved
	if !sure {
		o.ledger.Either[seq] = true
		return
	}
	o.ledger.Due[seq] = e2etest.Due{At: moved}
	o.ledger.Cancels[seq+resched] = true
}

func (o *ops) replace(i int) {
	now := time.Now().Truncate(time.Millisecond)
	seq, id := o.e.Seq("p"+strconv.Itoa(i)), o.e.Run+"-p"+strconv.Itoa(i)
	first, second := now.Add(o.between(10*time.Second, 30*time.Second)), now.Add(o.between(5*time.Second, 30*time.Second))
	task := e2etest.TaskMessage(o.topic, seq, id, now, first, i)
	v2 := seq + "/v2"
	op := kafka.Message{Key: task.Key, Value: []byte("payload-" + v2), Time: now, Headers: []kafka.Header{
		{Key: payload.HeaderOp, Value: []byte(payload.OpReplace)},
		{Key: payload.HeaderID, Value: []byte(id)},
		{Key: payload.HeaderTopic, Value: []byte(o.topic)},
		{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(second.UnixMilli(), 10))},
		{Key: "seq", Value: []byte(v2)},
	}}
	sure, _ := o.write([]kafka.Message{task, op}, minTime(first, second))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.due[seq], o.due[v2] = first, second
	if !sure {
		o.ledger.Either[seq], o.ledger.Either[v2] = true, true
		return
	}
	o.ledger.Cancelled[seq] = true
	o.ledger.Due[v2] = e2etest.Due{At: second}
}

func (o *ops) recurring(i int) {
	now := time.Now().Truncate(time.Millisecond)
	seq, id := o.e.Seq("c"+strconv.Itoa(i)), o.e.Run+"-c"+strconv.Itoa(i)
	first := now.Add(o.between(5*time.Second, 15*time.Second))
	msg := kafka.Message{Key: []byte("k" + seq), Value: []byte("tick"), Time: now, Headers: []kafka.Header{
		{Key: payload.HeaderTopic, Value: []byte(o.topic)},
		{Key: payload.HeaderID, Value: []byte(id)},
		{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(first.UnixMilli(), 10))},
		{Key: payload.HeaderEvery, Value: []byte(occEvery.String())},
		{Key: payload.HeaderCount, Value: []byte(strconv.Itoa(occurrences))},
		{Key: "seq", Value: []byte(seq)},
	}}
	sure, _ := o.write([]kafka.Message{msg}, first)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.series[seq] = true
	for n := 1; n <= occurrences; n++ {
		occ := OccurrenceSeq(seq, strconv.Itoa(n))
		at := first.Add(time.Duration(n-1) * occEvery)
		o.due[occ] = at
		if sure {
			o.ledger.Due[occ] = e2etest.Due{At: at}
		} else {
			o.ledger.Either[occ] = true
		}
	}
}

func (o *ops) malformed(i int) {
	seq := o.e.Seq("poison-" + strconv.Itoa(i))
	if _, written := o.write([]kafka.Message{e2etest.MalformedMessage(seq, o.bad[i%len(o.bad)], time.Now())}, time.Time{}); !written {
		return
	}
	o.mu.Lock()
	o.ledger.Malformed[seq] = true
	o.mu.Unlock()
}

// write produces batch to delay-input until Kafka takes it or the stream
// stops, and reports whether its outcome can be judged (sure: written at
// the first try, opMargin before due at least; a zero due: any time) and
// whether it was written.
func (o *ops) write(batch []kafka.Message, due time.Time) (sure, written bool) {
	for i := range batch {
		batch[i].Topic = topics.Input
	}
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := o.w.WriteMessages(ctx, batch...)
		cancel()
		if err == nil {
			sure := try == 0 && (due.IsZero() || time.Until(due) >= opMargin)
			if !sure {
				o.mu.Lock()
				o.doubts++
				o.mu.Unlock()
			}
			return sure, true
		}
		select {
		case <-o.stop:
			// Never written (or unknown): not judged.
			o.mu.Lock()
			o.doubts++
			o.mu.Unlock()
			return false, false
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

package e2etest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/topics"
)

// Input shape of a Source.
const (
	rate        = 400              // tasks per second
	span        = 30 * time.Second // delays are uniform over [0, span)
	cancelShare = 0.03             // share of tasks cancelled
	minCancel   = 5 * time.Second  // a cancelled task is due at least this late
	batchEvery  = 50 * time.Millisecond
	badEvery    = 3 * time.Second // one malformed message this often, while any is left
)

// Source produces a steady stream of tasks to delay-input as an outside
// client would (400 tasks/s, delays 0–30 s, about 3 % cancelled, half of
// the cancels before their task, 13 malformed messages), and keeps the
// ledger of what Kafka accepted. A batch Kafka does not take is retried
// until written; meanwhile the stream pauses (it does not catch up
// afterwards).
type Source struct {
	e     *Env
	rate  int // tasks per second
	topic string
	name  string // seqs are Env.Seq(name + i)
	w     *kafka.Writer
	rng   *rand.Rand
	bad   [][]kafka.Header
	stop  chan struct{} // closed by StopInput: write what is left, then end
	quit  chan struct{} // closed when the test ends: end now
	done  chan struct{}
	once  sync.Once

	mu      sync.Mutex
	tasks   map[string]*sent // by seq
	late    []pendingCancel  // cancels to produce after their task
	n       int              // tasks generated
	badSent int              // malformed messages generated
	stats   SourceStats
}

type sent struct {
	execAt    time.Time
	accepted  time.Time // zero until written
	cancel    bool      // a cancel was planned
	cancelled time.Time // when the cancel was written; zero until then
}

type pendingCancel struct {
	at  time.Time // produce it then
	msg kafka.Message
}

// SourceStats tells how Kafka took a Source's input.
type SourceStats struct {
	Retries    int           // WriteMessages calls that failed
	Longest    time.Duration // longest a batch waited to be written
	LastFailed error
}

// Stream starts a Source of tasks for topic, their seqs prefixed with
// name; StopInput ends it.
func (e *Env) Stream(topic, name string) *Source { return e.StreamRate(topic, name, rate) }

// StreamRate is Stream at perSecond tasks a second (a multiple of 20)
// instead of 400.
func (e *Env) StreamRate(topic, name string, perSecond int) *Source {
	s := &Source{
		e: e, topic: topic, name: name, rate: perSecond,
		w:     producer.New(producer.Config{Brokers: e.Brokers}),
		rng:   rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11)),
		bad:   MalformedHeaders(topic),
		stop:  make(chan struct{}),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
		tasks: map[string]*sent{},
	}
	go s.run()
	// A test that failed half way must not leave its stream running into
	// the next test, even while Kafka is away.
	e.T.Cleanup(func() {
		close(s.quit)
		<-s.done
	})
	return s
}

func (s *Source) run() {
	defer close(s.done)
	defer s.w.Close()
	tick := time.NewTicker(batchEvery)
	defer tick.Stop()
	lastBad := time.Now()
	for {
		select {
		case <-s.quit:
			return
		case <-s.stop:
			// The cancels still waiting are in time: their tasks are
			// due at least minCancel after they were produced.
			// So are the malformed messages not sent yet: a run
			// always has all of them.
			var rest []kafka.Message
			for _, c := range s.late {
				rest = append(rest, c.msg)
			}
			s.late = nil
			now := time.Now().Truncate(time.Millisecond)
			for s.badSent < len(s.bad) {
				rest = append(rest, s.malformed(now))
			}
			s.write(rest)
			return
		case <-tick.C:
		}
		now := time.Now().Truncate(time.Millisecond)
		var batch []kafka.Message
		for range s.rate * int(batchEvery) / int(time.Second) {
			batch = append(batch, s.next(now)...)
		}
		if s.badSent < len(s.bad) && now.Sub(lastBad) >= badEvery {
			lastBad = now
			batch = append(batch, s.malformed(now))
		}
		for len(s.late) > 0 && !s.late[0].at.After(now) {
			batch = append(batch, s.late[0].msg)
			s.late = s.late[1:]
		}
		s.write(batch)
	}
}

// malformed generates the next malformed message.
func (s *Source) malformed(now time.Time) kafka.Message {
	seq := s.e.Seq(s.name + "bad-" + strconv.Itoa(s.badSent))
	s.badSent++
	return MalformedMessage(seq, s.bad[s.badSent-1], now)
}

// next generates one task, preceded by its cancel for half of the
// cancelled ones; the other half's cancels wait in s.late.
func (s *Source) next(now time.Time) []kafka.Message {
	i := s.n
	s.n++
	seq := s.e.Seq(s.name + strconv.Itoa(i))
	id := fmt.Sprintf("%s-%s%d", s.e.Run, s.name, i)
	delay := time.Duration(s.rng.Int64N(int64(span))).Truncate(time.Millisecond)
	cancel := s.rng.Float64() < cancelShare
	if cancel && delay < minCancel {
		delay = minCancel + time.Duration(s.rng.Int64N(int64(span-minCancel))).Truncate(time.Millisecond)
	}
	execAt := now.Add(delay)
	s.mu.Lock()
	s.tasks[seq] = &sent{execAt: execAt, cancel: cancel}
	s.mu.Unlock()
	task := TaskMessage(s.topic, seq, id, now, execAt, i)
	if !cancel {
		return []kafka.Message{task}
	}
	c := CancelMessage(s.topic, seq, id, execAt, now)
	if i%2 == 0 {
		return []kafka.Message{c, task}
	}
	// One to two seconds after its task, well before it is due.
	at := now.Add(time.Second + time.Duration(s.rng.Int64N(int64(time.Second))))
	s.late = append(s.late, pendingCancel{at: at, msg: c})
	return []kafka.Message{task}
}

// write produces msgs, retrying what Kafka did not take until all is
// written, and records when each task and cancel was accepted.
func (s *Source) write(msgs []kafka.Message) {
	start := time.Now()
	for i := range msgs {
		msgs[i].Topic = topics.Input
	}
	for len(msgs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.w.WriteMessages(ctx, msgs...)
		cancel()
		var failed []kafka.Message
		var werrs kafka.WriteErrors
		switch {
		case err == nil:
			s.accept(msgs, time.Now())
		case errors.As(err, &werrs) && len(werrs) == len(msgs):
			for i, m := range msgs {
				if werrs[i] == nil {
					s.accept([]kafka.Message{m}, time.Now())
				} else {
					failed = append(failed, m)
				}
			}
		default:
			// Nothing is known of what was written: write all again (a
			// task rewritten with its delay-id and time is one task).
			failed = msgs
		}
		if len(failed) > 0 {
			select {
			case <-s.quit:
				return
			default:
			}
			s.mu.Lock()
			s.stats.Retries++
			s.stats.LastFailed = err
			s.mu.Unlock()
			time.Sleep(500 * time.Millisecond)
		}
		msgs = failed
	}
	s.mu.Lock()
	s.stats.Longest = max(s.stats.Longest, time.Since(start))
	s.mu.Unlock()
}

func (s *Source) accept(msgs []kafka.Message, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		seq := Header(m, "seq")
		if t, ok := s.tasks[seq]; ok && t.accepted.IsZero() {
			t.accepted = at
			continue
		}
		if Header(m, "delay-op") == "cancel" {
			task := seq[:len(seq)-len(CancelSeq(""))]
			if t, ok := s.tasks[task]; ok && t.cancelled.IsZero() {
				t.cancelled = at
			}
		}
	}
}

// StopInput ends the stream once its last batch and the cancels still
// waiting are written, and returns the ledger: a task whose cancel Kafka
// accepted only after the task was due is in Either (delivered or not,
// both are right), and counted in late.
func (s *Source) StopInput() (l Ledger, lastDue time.Time, late int) {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	l = NewLedger()
	for seq, t := range s.tasks {
		lastDue = maxTime(lastDue, t.execAt)
		switch {
		case !t.cancel:
			l.Due[seq] = Due{At: t.execAt, Accepted: t.accepted}
		case !t.cancelled.IsZero() && t.cancelled.Before(t.execAt):
			l.Cancelled[seq] = true
			l.Cancels[CancelSeq(seq)] = true
		default:
			late++
			l.Either[seq] = true
			l.Cancels[CancelSeq(seq)] = true
		}
	}
	for i := range s.badSent {
		l.Malformed[s.e.Seq(s.name+"bad-"+strconv.Itoa(i))] = true
	}
	return l, lastDue, late
}

// DueTimes returns the due time of every task generated so far, cancelled
// or not, by seq.
func (s *Source) DueTimes() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := make(map[string]time.Time, len(s.tasks))
	for seq, t := range s.tasks {
		due[seq] = t.execAt
	}
	return due
}

// Statistics returns how Kafka took the input so far.
func (s *Source) Statistics() SourceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

package scanner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/delayq/delayq/internal/drain"
	"github.com/delayq/delayq/payload"
)

// Values of the result label of delayq_scan_tasks_total.
const (
	resultDone      = "done"      // the zset has nothing due up to until any more
	resultInvalid   = "invalid"   // the scan message could not be parsed
	resultAbandoned = "abandoned" // stop or rebalance came first; the next owner scans again
	resultMoved     = "moved"     // the topic grew: the zset is scanned from its new partition
)

// Values of the reason label of delayq_tasks_failed_total.
const (
	reasonRefused       = "refused"       // refused by its business topic, produced to FailedTopic
	reasonUndeliverable = "undeliverable" // refused by FailedTopic too: logged and dropped
	reasonLifecycle     = "lifecycle"     // a reschedule's check row: no task of its id came within the grace (ingest.ReasonLifecycle)
)

// maxCalls caps the WriteMessages calls of one step in flight at once.
const maxCalls = 32

// sender writes a worker's deliveries (one call per topic) and parks
// the ones to write alone (park.go). Only its worker's goroutine uses it.
type sender struct {
	s      *Scanner
	parked parkHeap // deliveries to write alone, by next attempt
}

// delivery is a task's message on its way to its business topic, or to
// FailedTopic once the business topic refused it.
type delivery struct {
	entry    entry
	task     *payload.Task
	msg      kafka.Message
	failed   bool   // msg goes to FailedTopic
	reason   string // reason label once written to FailedTopic; "" = reasonRefused
	stripped bool   // msg lost key, value and pass-through headers to fit FailedTopic
	held     bool   // released after a pause or a rate limit held it back (release.go)

	// Written alone (park.go):
	unknown  int       // alone writes answered "unknown topic"
	attempts int       // alone writes that failed since the last redirect
	next     time.Time // when the next alone write is due
	index    int       // in the worker's park heap; -1 when not in it
}

// deliver produces ds, one WriteMessages call per topic, concurrently, so
// that a topic the brokers refuse fails no other topic's call (kafka-go
// fails a whole call when one of its topics is unknown). When every
// message failed for a reason that is not theirs (brokers unreachable,
// leaders moving: an outage), the stage stalls and writes them again with
// backoff while ctx lives. Otherwise what was written is settled and what
// failed is parked, to be written alone off the step (park.go): a batch's
// error is given to every message of a partition batch, so a message is
// judged only on an answer about itself. It returns an error only when ctx
// ended first; the messages not written then keep their entries.
func (sd *sender) deliver(ctx context.Context, ds []*delivery) error {
	pending := ds
	err := sd.s.stage.Do(ctx, "write", sd.s.policy, func(ctx context.Context) error {
		failed, outage := sd.writeByTopic(ctx, pending)
		if outage != nil {
			pending = failed
			return outage
		}
		now := time.Now()
		for _, d := range failed {
			sd.park(d, now)
		}
		pending = nil
		return nil
	})
	if err != nil {
		return fmt.Errorf("scanner: write %d messages: %w", len(pending), err)
	}
	return nil
}

// writeByTopic writes ds with one call per topic and settles the written
// ones. It returns the others, and outage when nothing was written and
// every failure was transient.
func (sd *sender) writeByTopic(ctx context.Context, ds []*delivery) (failed []*delivery, outage error) {
	byTopic := make(map[string][]*delivery)
	for _, d := range ds {
		byTopic[d.msg.Topic] = append(byTopic[d.msg.Topic], d)
	}
	type call struct {
		ds   []*delivery
		errs []error
	}
	calls := make([]*call, 0, len(byTopic))
	for _, tds := range byTopic {
		calls = append(calls, &call{ds: tds})
	}
	wctx, cancel := drain.Context(ctx, sd.s.cfg.writeGrace())
	defer cancel()
	now := time.Now()
	var g errgroup.Group
	g.SetLimit(maxCalls)
	for _, c := range calls {
		g.Go(func() error {
			c.errs = write(wctx, sd.s.w, c.ds, now)
			return nil
		})
	}
	_ = g.Wait()
	// The brokers answered if they wrote a message or said something
	// about one; otherwise the write met an outage.
	var (
		answered bool
		last     error
	)
	at := time.Now()
	for _, c := range calls {
		for i, d := range c.ds {
			err := c.errs[i]
			switch {
			case err == nil:
				answered = true
				sd.written(d, at)
				continue
			case messageError(err):
				answered = true
			}
			last = err
			failed = append(failed, d)
		}
	}
	if !answered && last != nil {
		return failed, last
	}
	return failed, nil
}

// write produces the messages of ds (one topic) in one call stamped at now
// and returns one error per message (nil when written). kafka-go stamps a
// message without a time with 0, which time-based retention deletes at
// once.
func write(ctx context.Context, wr Writer, ds []*delivery, now time.Time) []error {
	msgs := make([]kafka.Message, len(ds))
	for i, d := range ds {
		d.msg.Time = now
		msgs[i] = d.msg
	}
	errs := make([]error, len(ds))
	err := wr.WriteMessages(ctx, msgs...)
	if err == nil {
		return errs
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) && len(werrs) == len(msgs) {
		copy(errs, werrs)
		return errs
	}
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// written settles d, whose message was produced at.
func (sd *sender) written(d *delivery, at time.Time) {
	d.entry.settle()
	if d.failed {
		sd.s.m.failed.WithLabelValues(cmp.Or(d.reason, reasonRefused)).Inc()
		return
	}
	sd.s.m.delivered.Inc()
	switch {
	case d.task.PastDue: // asked for the past: late by the producer's choice, not delayq's
		sd.s.m.pastDue.Inc()
		return
	case d.held: // held by a pause or a rate: not late by delayq's fault either
		sd.s.cm.lateness.Observe(at.Sub(time.UnixMilli(d.task.ExecAt)).Seconds())
		return
	}
	sd.s.m.lateness.Observe(at.Sub(time.UnixMilli(d.task.ExecAt)).Seconds())
}

// permanent reports whether a produce error, answered about one message
// alone, means its topic will never take it: too large, an invalid topic,
// a record the broker refuses. An authorization failure is not permanent:
// delayd's own Kafka principal lacks an ACL the operator can grant, an
// outage of delayd's setup rather than bad input (see unauthorized).
func permanent(err error) bool {
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke {
	case kafka.MessageSizeTooLarge,
		kafka.InvalidTopic,
		kafka.RecordListTooLarge,
		kafka.InvalidRecord,
		kafka.InvalidTimestamp,
		kafka.PolicyViolation,
		kafka.UnsupportedForMessageFormat:
		return true
	}
	return false
}

// messageError reports whether a produce error is about the message or its
// topic rather than the brokers: a permanent error, an unauthorized or an
// unknown topic.
// kafka-go answers "unknown topic" from its metadata cache (producer.New
// does not auto-create topics), so the shared writer's answer only parks
// the message: the single writer's answers are confirmed by the brokers
// (confirmed) before they count towards MaxAttempts.
func messageError(err error) bool {
	return permanent(err) || unauthorized(err) || errors.Is(err, kafka.UnknownTopicOrPartition)
}

// unauthorized reports whether a produce error says delayd may not write
// the topic: its deliveries stay parked, retried with backoff and logged,
// until an operator grants the ACL (or pauses the topic); they never go to
// FailedTopic for it.
func unauthorized(err error) bool {
	return errors.Is(err, kafka.TopicAuthorizationFailed)
}

// redirect turns d.msg into a message for FailedTopic: the deliverable
// message plus delay-topic (the business topic) and delay-error (why).
func (s *Scanner) redirect(d *delivery, reason string) {
	s.log.Warn("task refused by its topic", "id", d.task.Name, "topic", d.task.Topic,
		"exec_at", d.task.ExecAt, "reason", reason)
	d.toFailed(s.cfg.FailedTopic, reason)
}

// toFailed is redirect to failed without the log line.
func (d *delivery) toFailed(failed, reason string) {
	m := d.msg
	m.Topic = failed
	m.Headers = append(slices.Clip(m.Headers),
		kafka.Header{Key: payload.HeaderTopic, Value: []byte(d.task.Topic)},
		kafka.Header{Key: payload.HeaderError, Value: []byte(reason)})
	d.msg = m
	d.failed = true
	d.attempts = 0
}

// strip drops the key, value and pass-through headers of a FailedTopic
// message that FailedTopic refused (too large, typically), keeping the delay-*
// headers, so that the failure is still recorded.
func (d *delivery) strip(err error) {
	var hs []kafka.Header
	reason := ""
	for _, h := range d.msg.Headers {
		switch {
		case h.Key == payload.HeaderError:
			reason = string(h.Value)
		case strings.HasPrefix(h.Key, "delay-"):
			hs = append(hs, h)
		}
	}
	reason += "; key, value and headers dropped: " + err.Error()
	d.msg.Key, d.msg.Value = nil, nil
	d.msg.Headers = append(hs, kafka.Header{Key: payload.HeaderError, Value: []byte(reason)})
	d.stripped = true
	d.attempts = 0
}

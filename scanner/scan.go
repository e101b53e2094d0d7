package scanner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/drain"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/kafka/topics"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// ErrStore is wrapped when the store answers out of contract.
var ErrStore = errors.New("scanner: store answer out of contract")

// Values of the result label of delayq_scan_tasks_total.
const (
	resultDone      = "done"      // the zset has nothing due up to until any more
	resultInvalid   = "invalid"   // the scan message could not be parsed
	resultAbandoned = "abandoned" // stop or rebalance came first; the next owner scans again
)

// Values of the reason label of delayq_tasks_failed_total.
const (
	reasonRefused       = "refused"       // refused by its business topic, produced to FailedTopic
	reasonUndeliverable = "undeliverable" // refused by FailedTopic too: logged and dropped
)

// member is an entry of a zset: what a batch delivers and settles.
type member struct {
	zset  string
	entry zset.Entry
}

// item is a task of a batch on its way out.
type item struct {
	member   member
	task     *payload.Task
	msg      kafka.Message
	failed   bool // msg goes to FailedTopic
	stripped bool // msg lost key, value and pass-through headers to fit FailedTopic
	attempts int  // writes of msg that failed with "unknown topic"
	lastErr  error
}

// scanState is where a scan task stands between its steps.
type scanState struct {
	// upcoming are entries read up to until that were not due at the last
	// look, lowest score first. Steps deliver from them without reading the
	// zset again until they run out.
	upcoming []zset.Entry
	// settled are entries delivered (or cancelled, missing, or sent to the
	// failed topic) and not yet removed from the zset. They are removed
	// before the zset is read again, before the task is done, and on stop.
	settled []zset.Entry
	// more: the last read was a full batch, or the task waited since it, so
	// the zset may hold entries up to until beyond upcoming.
	more bool
	busy time.Duration // time spent in steps
}

// scan runs one scan task to the end: it delivers the entries of t.Zset up
// to t.Until, each once it is due, sleeping while the next one is not. It
// returns nil when done and an error only when ctx ended first; entries
// whose messages were produced are removed from the index in either case
// (see remove). Workers step many scan tasks together instead (see work);
// scan is the sequential form.
func (s *Scanner) scan(ctx context.Context, t scantask.Task) error {
	st := &scanState{more: true}
	for {
		start := time.Now()
		ready, done, err := s.prepare(ctx, t, st)
		if err == nil && len(ready) > 0 {
			var settled []member
			settled, err = s.batch(ctx, members(t.Zset, ready))
			st.settle(settled)
		}
		st.busy += time.Since(start)
		switch {
		case err != nil:
			return errors.Join(err, s.flush(ctx, t.Zset, st))
		case done:
			s.m.scanDuration.Observe(st.busy.Seconds())
			s.m.scanTasks.WithLabelValues(resultDone).Inc()
			return nil
		case len(ready) == 0:
			if !sleep(ctx, time.Until(time.UnixMilli(st.upcoming[0].ExecAt))) {
				err := fmt.Errorf("scanner: wait for %s: %w", t.Zset, ctx.Err())
				return errors.Join(err, s.flush(ctx, t.Zset, st))
			}
		}
	}
}

// prepare returns the entries of t.Zset up to t.Until that are due now,
// never one before its ExecAt, and moves them out of st.upcoming; the
// caller delivers them. It reads the zset only when the entries read before
// ran out, removing what st settled first (a read would return it again),
// so a wake between reads costs no Redis call. With nothing ready it
// reports either done (nothing up to t.Until is left; everything settled
// is removed by then) or, through st.upcoming[0], when the next entry falls
// due. It returns an error only when ctx ended first.
func (s *Scanner) prepare(ctx context.Context, t scantask.Task, st *scanState) (ready []zset.Entry, done bool, err error) {
	if len(st.upcoming) == 0 {
		if err := s.flush(ctx, t.Zset, st); err != nil {
			return nil, false, err
		}
		if !st.more {
			return nil, true, nil
		}
		err := s.retry(ctx, "due", t.Zset, func(ctx context.Context) (err error) {
			st.upcoming, err = s.ix.Due(ctx, t.Zset, t.Until, s.cfg.BatchSize)
			return err
		})
		if err != nil {
			return nil, false, err
		}
		st.more = len(st.upcoming) == s.cfg.BatchSize
		if len(st.upcoming) == 0 {
			return nil, true, nil
		}
	}
	// Lowest score first: the due entries are a prefix.
	now := time.Now().UnixMilli()
	n := 0
	for n < len(st.upcoming) && st.upcoming[n].ExecAt <= now {
		n++
	}
	if n == 0 {
		st.more = true // waiting: entries may arrive meanwhile
		return nil, false, nil
	}
	ready = st.upcoming[:n:n]
	st.upcoming = st.upcoming[n:]
	return ready, false, nil
}

// members pairs entries with their zset.
func members(key string, entries []zset.Entry) []member {
	ms := make([]member, len(entries))
	for i, e := range entries {
		ms[i] = member{zset: key, entry: e}
	}
	return ms
}

// settle records delivered members of st's zset for removal.
func (st *scanState) settle(ms []member) {
	for _, m := range ms {
		st.settled = append(st.settled, m.entry)
	}
}

// flush removes the settled entries of st from zset key (see remove).
func (s *Scanner) flush(ctx context.Context, key string, st *scanState) error {
	if len(st.settled) == 0 {
		return nil
	}
	if err := s.remove(ctx, key, st.settled); err != nil {
		return err
	}
	st.settled = st.settled[:0]
	return nil
}

// batch delivers the tasks of ms, members of one or more zsets, with one
// store Get and one write, and returns the members that may leave their
// zsets: delivered ones, cancelled and missing ones, and those produced to
// FailedTopic; the caller removes them. A member is returned only after its
// message was produced. On error (ctx ended) it returns what it settled
// before.
func (s *Scanner) batch(ctx context.Context, ms []member) (out []member, err error) {
	refs := make([]payload.Ref, len(ms))
	for i, m := range ms {
		refs[i] = payload.Ref{ID: m.entry.ID, ExecAt: m.entry.ExecAt}
	}
	key := ms[0].zset
	if len(ms) > 1 && ms[len(ms)-1].zset != key {
		key = fmt.Sprintf("%s and other zsets", key)
	}
	var tasks []*payload.Task
	err = s.retry(ctx, "get", key, func(ctx context.Context) error {
		got, err := s.store.Get(ctx, refs)
		if err != nil {
			return err
		}
		if len(got) != len(refs) {
			return fmt.Errorf("%w: %d rows for %d refs", ErrStore, len(got), len(refs))
		}
		tasks = got
		return nil
	})
	if err != nil {
		return nil, err
	}

	var (
		settled            []member // may leave the index
		missing, cancelled int
		items              []*item
	)
	for i, t := range tasks {
		switch {
		case t == nil:
			missing++
			settled = append(settled, ms[i])
		case t.Cancel:
			cancelled++
			settled = append(settled, ms[i])
		default:
			it := &item{member: ms[i], task: t, msg: payload.Deliverable(*t)}
			switch {
			case t.Topic == "":
				s.redirect(it, "no business topic")
			case topics.Internal(t.Topic):
				s.redirect(it, "internal topic "+t.Topic)
			}
			items = append(items, it)
		}
	}

	for round := 1; ; round++ {
		var (
			retry     []*item
			transient bool
		)
		if len(items) > 0 {
			if err := ctx.Err(); err != nil {
				return out, fmt.Errorf("scanner: write %s: %d messages unwritten: %w", key, len(items), err)
			}
			msgs := make([]kafka.Message, len(items))
			for i, it := range items {
				msgs[i] = it.msg
			}
			// A write is never cut short by the end of ctx: kafka-go goes on
			// producing a batch after WriteMessages returned ctx.Err(), so the
			// messages could be out without their entries being removed.
			wctx, cancel := drain.Context(ctx, writeGrace)
			errs := s.write(wctx, msgs)
			cancel()
			now := time.Now()
			for i, it := range items {
				err := errs[i]
				switch {
				case err == nil:
					settled = append(settled, it.member)
					if it.failed {
						s.m.failed.WithLabelValues(reasonRefused).Inc()
						continue
					}
					s.m.delivered.Inc()
					s.m.lateness.Observe(now.Sub(time.UnixMilli(it.task.ExecAt)).Seconds())
				case ctx.Err() != nil || !s.refused(err, it):
					transient = true
					it.lastErr = err
					retry = append(retry, it)
				case !it.failed:
					s.redirect(it, err.Error())
					retry = append(retry, it)
				case !it.stripped:
					s.strip(it, err)
					retry = append(retry, it)
				default:
					s.m.failed.WithLabelValues(reasonUndeliverable).Inc()
					s.log.Error("task dropped: failed topic refused it", "zset", it.member.zset, "id", it.task.Name,
						"topic", it.task.Topic, "exec_at", it.task.ExecAt, "err", err)
					settled = append(settled, it.member)
				}
			}
		}
		out = append(out, settled...)
		settled = nil
		s.m.missing.Add(float64(missing))
		s.m.cancelled.Add(float64(cancelled))
		missing, cancelled = 0, 0
		if len(retry) == 0 {
			return out, nil
		}
		items = retry
		if transient && !sleep(ctx, backoff(s.cfg.RetryBackoff, s.cfg.MaxBackoff, round)) {
			return out, fmt.Errorf("scanner: write %s: %d messages unwritten: %w (last error: %v)",
				key, len(items), ctx.Err(), items[0].lastErr)
		}
	}
}

// refused reports whether err means the topic of it.msg will not take it:
// a permanent Kafka error, or "unknown topic" MaxAttempts times in a row for
// a business topic (delayd creates FailedTopic, so there it stays transient).
func (s *Scanner) refused(err error, it *item) bool {
	if permanent(err) {
		return true
	}
	if !it.failed && errors.Is(err, kafka.UnknownTopicOrPartition) {
		it.attempts++
		return it.attempts >= s.cfg.MaxAttempts
	}
	return false
}

// permanent reports whether a produce error will not go away by retrying.
func permanent(err error) bool {
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke {
	case kafka.MessageSizeTooLarge,
		kafka.InvalidTopic,
		kafka.RecordListTooLarge,
		kafka.TopicAuthorizationFailed,
		kafka.InvalidRecord,
		kafka.InvalidTimestamp,
		kafka.PolicyViolation,
		kafka.UnsupportedForMessageFormat:
		return true
	}
	return false
}

// redirect turns it.msg into a message for FailedTopic: the deliverable
// message plus delay-topic (the business topic) and delay-error (why).
func (s *Scanner) redirect(it *item, reason string) {
	s.log.Warn("task refused by its topic", "id", it.task.Name, "topic", it.task.Topic,
		"exec_at", it.task.ExecAt, "reason", reason)
	m := it.msg
	m.Topic = s.cfg.FailedTopic
	m.Headers = append(slices.Clip(m.Headers),
		kafka.Header{Key: payload.HeaderTopic, Value: []byte(it.task.Topic)},
		kafka.Header{Key: payload.HeaderError, Value: []byte(reason)})
	it.msg = m
	it.failed = true
	it.attempts = 0
}

// strip drops the key, value and pass-through headers of a FailedTopic
// message that FailedTopic refused (too large, typically), keeping the delay-*
// headers, so that the failure is still recorded.
func (s *Scanner) strip(it *item, err error) {
	var hs []kafka.Header
	for _, h := range it.msg.Headers {
		if strings.HasPrefix(h.Key, "delay-") && h.Key != payload.HeaderError {
			hs = append(hs, h)
		}
	}
	reason := ""
	for _, h := range it.msg.Headers {
		if h.Key == payload.HeaderError {
			reason = string(h.Value)
		}
	}
	reason += "; key, value and headers dropped: " + err.Error()
	it.msg.Key, it.msg.Value = nil, nil
	it.msg.Headers = append(hs, kafka.Header{Key: payload.HeaderError, Value: []byte(reason)})
	it.stripped = true
}

// write produces msgs in one WriteMessages call and returns one error per
// message (nil when written). kafka-go fails a whole call, without per-message
// errors, when one topic is unknown or invalid or one message is too large;
// then the messages are written again per topic, and one by one when a single
// topic is left, so each message gets its own answer.
//
// Each message is stamped with the delivery time: kafka-go would otherwise
// send timestamp 0, which time-based retention deletes at once.
func (s *Scanner) write(ctx context.Context, msgs []kafka.Message) []error {
	errs := make([]error, len(msgs))
	now := time.Now()
	for i := range msgs {
		msgs[i].Time = now
	}
	err := s.w.WriteMessages(ctx, msgs...)
	if err == nil {
		return errs
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) && len(werrs) == len(msgs) {
		copy(errs, werrs)
		return errs
	}
	if len(msgs) > 1 && ctx.Err() == nil {
		byTopic := make(map[string][]int)
		for i, m := range msgs {
			byTopic[m.Topic] = append(byTopic[m.Topic], i)
		}
		if len(byTopic) > 1 {
			for _, idx := range byTopic {
				sub := make([]kafka.Message, len(idx))
				for j, i := range idx {
					sub[j] = msgs[i]
				}
				for j, e := range s.write(ctx, sub) {
					errs[idx[j]] = e
				}
			}
			return errs
		}
		if permanent(err) {
			for i := range msgs {
				errs[i] = s.w.WriteMessages(ctx, msgs[i])
			}
			return errs
		}
	}
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// remove removes entries from zset key, retrying while ctx lives and for a
// short grace after: the messages of these entries were produced (or need not
// be), so leaving them would deliver them again.
func (s *Scanner) remove(ctx context.Context, key string, entries []zset.Entry) error {
	rctx, cancel := drain.Context(ctx, removeGrace)
	defer cancel()
	return s.retry(rctx, "remove", key, func(ctx context.Context) error {
		return s.ix.Remove(ctx, key, entries)
	})
}

// retry calls fn until it succeeds or ctx ends, with exponential backoff.
func (s *Scanner) retry(ctx context.Context, op, key string, fn func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("scanner: %s %s: %w (last error: %v)", op, key, ctx.Err(), err)
		}
		s.log.Warn("call failed, retrying", "op", op, "zset", key, "attempt", attempt, "err", err)
		if !sleep(ctx, backoff(s.cfg.RetryBackoff, s.cfg.MaxBackoff, attempt)) {
			return fmt.Errorf("scanner: %s %s: %w (last error: %v)", op, key, ctx.Err(), err)
		}
	}
}

// backoff returns min(base * 2^(attempt-1), max).
func backoff(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

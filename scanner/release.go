package scanner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/delayq/delayq/internal/fence"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/scanner/schedule"
	"github.com/delayq/delayq/topicctl"
	"github.com/delayq/delayq/zset"
)

const (
	// releaseEvery is how often the releaser looks at the held topics.
	releaseEvery = 50 * time.Millisecond
	// releaseBatch caps the tasks of a topic released in one round.
	releaseBatch = 500
	// releaseRounds caps the rounds of one topic in a row while it has a
	// full batch due and no rate (a resumed backlog goes out in batches).
	releaseRounds = 20
	// leaseTTL is how long a releaser owns a topic without renewing it:
	// how soon another instance takes over after a crash.
	leaseTTL = 2 * time.Second
	// gaugeEvery is how often the releaser refreshes the topic gauges.
	gaugeEvery = 5 * time.Second
	// orderWait bounds how long the releaser waits for a task due before
	// a held one that is still in the index (on its way through a step of
	// any instance): an entry due longer ago than that (a parked delivery
	// of another topic) no longer holds it back.
	orderWait = 5 * time.Second
	// fenceEvery is how often the releaser reads the fence (fence), at
	// most; fenceSpacing times the last read's own duration, at least: one
	// ZRANGEBYSCORE per zset of the current segments, tens of thousands
	// in a dense minute, must not take a share of Redis.
	fenceEvery   = 200 * time.Millisecond
	fenceSpacing = 20
)

// releaser delivers the held tasks of the topics that are not paused, at
// their rates, lowest exec_at first (the rules: schedule.Fence, Admit,
// Again, Forget). One instance at a time releases a topic
// (Controls.Lease). Like a step, it delivers nothing past Hold's cutoff (a
// cancel may still be queued in delay-input).
type releaser struct {
	s     *Scanner
	owner string // this instance, in the topics' leases
	// fenceNext and fenceUntil: when the fence is read again, and the
	// last one read (fence).
	fenceNext  time.Time
	fenceUntil int64
}

// newReleaser returns the releaser of s, owner of its leases.
func newReleaser(s *Scanner) *releaser {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &releaser{s: s, owner: hex.EncodeToString(b[:])}
}

// run releases every releaseEvery until ctx ends.
func (r *releaser) run(ctx context.Context) {
	s := r.s
	t := time.NewTicker(releaseEvery)
	defer t.Stop()
	failing := false // one line when rounds start failing, one when they succeed again
	var gauged time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := r.round(ctx)
		if err == nil && time.Since(gauged) >= gaugeEvery {
			gauged = time.Now()
			err = r.gauge(ctx)
		}
		switch {
		case ctx.Err() != nil:
		case err != nil && !failing:
			failing = true
			s.log.Warn("release of held tasks failed, trying again every round until it succeeds", "err", err)
		case err == nil && failing:
			failing = false
			s.log.Info("release of held tasks recovered")
		}
	}
}

// round releases what is due of every held topic this instance leases.
// An error ends the round; the next one starts afresh.
func (r *releaser) round(ctx context.Context) error {
	c := r.s.cfg.Controls
	held, err := c.HeldTopics(ctx)
	if err != nil || len(held) == 0 {
		return err
	}
	sn, err := c.Controls(ctx)
	if err != nil {
		return err
	}
	for _, topic := range held {
		ctl := sn.Of(topic)
		if !schedule.Releasable(rules(ctl)) {
			continue
		}
		start := time.Now() // before the lease is asked for: its expiry on this clock
		ok, err := c.Lease(ctx, topic, r.owner, leaseTTL)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := r.release(ctx, topic, ctl, start); err != nil {
			return err
		}
	}
	return nil
}

// release runs the rounds of topic under its lease, taken at start and
// kept while they run (keep). The topic's writes are fenced by it
// (fence.go): a round that outlasts leaseTTL on a slow machine or behind
// a slow dependency goes on, and its deliveries are released, where a
// lease that lapsed mid-round refused the release and the next round
// delivered the same tasks again; a releaser paused past its lease writes
// nothing for the topic when it wakes.
func (r *releaser) release(ctx context.Context, topic string, ctl topicctl.Control, start time.Time) error {
	lctx, _, stop := fence.Keep(ctx, ctx, func(rctx context.Context, l *fence.Lease) {
		r.keep(rctx, topic, start, l)
	})
	defer stop()
	until, err := r.fence(ctx)
	if err != nil {
		return err
	}
	for range releaseRounds {
		n, err := r.topic(lctx, topic, ctl, until)
		if err != nil {
			return err
		}
		if !schedule.Again(rules(ctl), n, releaseBatch) {
			return nil
		}
	}
	return nil
}

// keep keeps the lease of topic taken at at valid in l, renewing it every
// leaseTTL/4 until ctx ends. Renew never takes a lapsed lease: once it
// lapsed (a pause, or renewals failing for leaseTTL) or passed to another
// owner, l is revoked and the writes under it are refused. A renewal that
// fails leaves l valid until the last one's expiry, then makes the writes
// wait for the next one.
func (r *releaser) keep(ctx context.Context, topic string, at time.Time, l *fence.Lease) {
	l.Renew(at.Add(leaseTTL))
	t := time.NewTicker(leaseTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		at := time.Now()
		ok, err := r.s.cfg.Controls.Renew(ctx, topic, r.owner, leaseTTL)
		switch {
		case err != nil:
			continue
		case !ok:
			l.Revoke()
			return
		}
		l.Renew(at.Add(leaseTTL))
	}
}

// fence returns how far (exec_at, unix ms) the releaser may go
// (schedule.Fence): Hold's cutoff, or the earliest entry due within
// orderWait still in the index when that is earlier, so that a task due
// before the fence that a step has not delivered goes out first (due
// order), across instances. An older fence is as safe, only later: it is
// read again after fenceEvery, or fenceSpacing times as long as the last
// read took if that is longer.
func (r *releaser) fence(ctx context.Context) (int64, error) {
	now := time.Now()
	if now.Before(r.fenceNext) {
		return r.fenceUntil, nil
	}
	cutoff := r.s.plan.Cutoff(now.UnixMilli())
	low, found, err := r.s.ix.Earliest(ctx, now.Add(-orderWait).UnixMilli(), cutoff)
	if err != nil {
		return 0, fmt.Errorf("scanner: earliest pending entry: %w", err)
	}
	until := schedule.Fence(cutoff, low, found)
	r.fenceNext, r.fenceUntil = now.Add(max(fenceEvery, fenceSpacing*time.Since(now))), until
	return until, nil
}

// topic delivers up to releaseBatch held tasks of topic due by until
// (and that its bucket allows: schedule.Admit) and returns how many it
// read.
func (r *releaser) topic(ctx context.Context, topic string, ctl topicctl.Control, until int64) (int, error) {
	c := r.s.cfg.Controls
	now := time.Now()
	refs, err := c.Held(ctx, topic, until, releaseBatch)
	if err != nil {
		return 0, err
	}
	read := len(refs)
	if schedule.Forget(rules(ctl), read) {
		return 0, c.Forget(ctx, topic)
	}
	if read == 0 {
		return 0, nil
	}
	granted := read
	if want := schedule.Want(rules(ctl), read); want >= 0 {
		granted, err = c.Take(ctx, topic, ctl.Rate, want, now)
		if err != nil {
			return 0, err
		}
	}
	refs = schedule.Admit(rules(ctl), refs, granted)
	if len(refs) == 0 {
		return read, nil
	}
	done, err := r.deliverHeld(ctx, topic, refs, ctl)
	if err != nil {
		return 0, err
	}
	return read, c.Release(ctx, topic, done)
}

// deliverHeld delivers the held refs of topic like a step delivers due
// entries, except that the next occurrences of recurring tasks were
// planned when they were held, and returns the refs settled: delivered,
// cancelled, missing or sent to FailedTopic. Deliveries a write refused
// are written alone (park.go) before it returns.
func (r *releaser) deliverHeld(ctx context.Context, topic string, refs []payload.Ref, ctl topicctl.Control) ([]payload.Ref, error) {
	s := r.s
	ld, out := loader{s: s}, &sender{s: s}
	// z collects what settles; its entries are in no zset.
	z := &zsetScan{key: "held:" + topic, index: -1}
	tasks, bad, err := ld.get(ctx, refs)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var ds []*delivery
	for i, task := range tasks {
		e := entry{z: z, Entry: zset.Entry{ID: refs[i].ID, ExecAt: refs[i].ExecAt}}
		switch {
		case bad[i] != nil:
			d := &delivery{entry: e, task: standIn(e), index: -1}
			s.internal(d, bad[i])
			ds = append(ds, d)
		case task == nil:
			s.missing(e)
			e.settle()
		case task.Cancel:
			s.m.cancelled.Inc()
			e.settle()
		default:
			d := ld.deliveryFor(e, task)
			d.held = true
			if !d.failed {
				d.expire(ctl, now, s.cfg.FailedTopic)
			}
			ds = append(ds, d)
		}
	}
	if len(ds) > 0 {
		if err := out.deliver(ctx, ds); err != nil {
			return nil, err
		}
	}
	for len(out.parked) > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Until(out.parked[0].next)):
		}
		if _, err := out.retry(ctx); err != nil {
			return nil, err
		}
	}
	done := make([]payload.Ref, len(z.settled))
	for i, e := range z.settled {
		done[i] = payload.Ref{ID: e.ID, ExecAt: e.ExecAt}
	}
	return done, nil
}

// gaugeTopics sets delayq_topic_paused and delayq_topic_held_tasks from
// the controls; topics without a control or held tasks leave them.
func (r *releaser) gauge(ctx context.Context) error {
	s := r.s
	st, all, err := s.cfg.Controls.List(ctx)
	if err != nil {
		return err
	}
	s.cm.paused.Reset()
	s.cm.heldTopics.Reset()
	for _, t := range st {
		paused := 0.0
		if t.State(all) == "paused" {
			paused = 1
		}
		s.cm.paused.WithLabelValues(t.Topic).Set(paused)
		s.cm.heldTopics.WithLabelValues(t.Topic).Set(float64(t.Held))
	}
	return nil
}

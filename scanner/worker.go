package scanner

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/delayq/delayq/internal/drain"
	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/zset"
)

// zsetScan is what a worker holds of one zset: its scan tasks in offset
// order, the first of which is being scanned (from cur), the entries
// settled and not yet removed, and the entries whose delivery is parked.
type zsetScan struct {
	key   string
	tasks []scanTask
	cur   cursor // of tasks[0]
	// settled are entries delivered (or cancelled, missing, or sent to the
	// failed topic) and not yet removed from the zset. They are removed
	// before the zset is read again, before a task is done, and on stop.
	settled []zset.Entry
	// parked are the entries whose delivery waits to be written alone
	// (park.go); a read of the zset skips them.
	parked map[zset.Entry]bool
	wake   time.Time // when the next step of tasks[0] is due
	// early: wake is Prefetch before the next entry's (coalesced) exec_at,
	// so the step takes the entries due by wake + Prefetch. A step at once
	// (a new task, more due, a parked wait) takes only those due by then:
	// its wait for later entries would hold up the worker's other zsets.
	early bool
	index int // in the worker's wake heap; -1 when not in it
}

// cursor is where a scan task stands between its steps.
type cursor struct {
	// upcoming are entries read up to until that were not due at the last
	// look, lowest score first. Steps deliver from them without reading the
	// zset again until they run out.
	upcoming []zset.Entry
	// more: the last read was a full batch, or the task waited since it, so
	// the zset may hold entries up to until beyond upcoming.
	more    bool
	stepped bool          // the task has been stepped at least once
	busy    time.Duration // time spent in steps
}

func newCursor() cursor { return cursor{more: true} }

// skipParked returns the entries of es that are not parked.
func (z *zsetScan) skipParked(es []zset.Entry) []zset.Entry {
	if len(z.parked) == 0 {
		return es
	}
	out := es[:0:0]
	for _, e := range es {
		if !z.parked[e] {
			out = append(out, e)
		}
	}
	return out
}

// idle reports whether the worker can forget z.
func (z *zsetScan) idle() bool {
	return len(z.tasks) == 0 && len(z.settled) == 0 && len(z.parked) == 0
}

// wakeHeap orders zsets by wake time.
type wakeHeap []*zsetScan

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].wake.Before(h[j].wake) }
func (h wakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *wakeHeap) Push(x any) { z := x.(*zsetScan); z.index = len(*h); *h = append(*h, z) }
func (h *wakeHeap) Pop() any {
	old := *h
	z := old[len(old)-1]
	*h = old[:len(old)-1]
	z.index = -1
	return z
}

// worker runs the scan tasks of one queue of a partition. Only its
// goroutine touches its zsets.
type worker struct {
	s      *Scanner
	p      *partition
	zsets  map[string]*zsetScan
	wakes  wakeHeap // zsets with a scan task, by wake
	parked parkHeap // deliveries to write alone, by next attempt (park.go)
}

// work runs the scan tasks of queue until stopCtx ends or the queue is
// closed and everything it brought is done.
//
// Tasks of one zset run one after the other, in offset order. Tasks of
// different zsets interleave: the worker takes every zset whose next entry
// is due (the dispatcher looks one tick ahead, so most wait for their
// entries' exec_at in a timer heap) and delivers their due entries
// together, with one store Get and one write per topic, so waiting never
// delays another zset and a busy worker batches more. Deliveries that a
// write refused, or failed for alone, are parked and written alone on their
// own schedule (park.go), so they never hold up a step.
//
// On stop it starts nothing more: a step in flight goes on for the first
// two thirds of DrainTimeout (no retry and no new call after that; a write
// already started gets DrainTimeout/6 more), then the entries settled by
// every zset are removed, concurrently, within the last third (drain).
// Tasks still held stay unfinished, so the next owner reads them again.
func (s *Scanner) work(stopCtx context.Context, p *partition, queue <-chan scanTask) {
	w := &worker{s: s, p: p, zsets: map[string]*zsetScan{}}
	d := s.cfg.DrainTimeout
	workCtx, cancel := drain.Context(stopCtx, d-d/3)
	defer cancel()
	w.run(stopCtx, workCtx, queue)
}

func (w *worker) run(stopCtx, workCtx context.Context, queue <-chan scanTask) {
	open := true
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		open = w.take(queue, open)
		if stopCtx.Err() != nil {
			w.drain(workCtx)
			return
		}
		now := time.Now()
		canStep := len(w.parked) < maxParked
		switch {
		case len(w.parked) > 0 && !w.parked[0].next.After(now):
			if err := w.retryParked(workCtx); err != nil {
				w.drain(workCtx)
				return
			}
			continue
		case canStep && len(w.wakes) > 0 && !w.wakes[0].wake.After(now):
			if err := w.stepWoken(workCtx, now); err != nil {
				w.drain(workCtx)
				return
			}
			continue
		case !open && len(w.wakes) == 0 && len(w.parked) == 0:
			return
		}
		open = w.wait(stopCtx, queue, open, timer, canStep)
	}
}

// take adds what the queue holds, without waiting, and returns whether
// the queue is still open.
func (w *worker) take(queue <-chan scanTask, open bool) bool {
	for open {
		select {
		case task, ok := <-queue:
			if open = ok; ok {
				w.add(task)
			}
		default:
			return open
		}
	}
	return open
}

// stepWoken steps the zsets whose wake time has come, up to maxGroup.
func (w *worker) stepWoken(ctx context.Context, now time.Time) error {
	var group []*zsetScan
	for len(w.wakes) > 0 && !w.wakes[0].wake.After(now) && len(group) < maxGroup {
		group = append(group, heap.Pop(&w.wakes).(*zsetScan))
	}
	err := w.step(ctx, group)
	for _, z := range group {
		switch {
		case len(z.tasks) > 0:
			heap.Push(&w.wakes, z)
		case z.idle():
			delete(w.zsets, z.key)
		}
	}
	return err
}

// wait waits for the next wake (of a zset, when canStep, or of a parked
// entry), a scan task or the stop, and returns whether the queue is still
// open.
func (w *worker) wait(stopCtx context.Context, queue <-chan scanTask, open bool, timer *time.Timer, canStep bool) bool {
	var next time.Time
	if canStep && len(w.wakes) > 0 {
		next = w.wakes[0].wake
	}
	if len(w.parked) > 0 && (next.IsZero() || w.parked[0].next.Before(next)) {
		next = w.parked[0].next
	}
	var wake <-chan time.Time
	if !next.IsZero() {
		timer.Reset(time.Until(next))
		wake = timer.C
	}
	var in <-chan scanTask
	if open {
		in = queue
	}
	defer timer.Stop()
	select {
	case task, ok := <-in:
		if open = ok; ok {
			w.add(task)
		}
	case <-wake:
	case <-stopCtx.Done():
	}
	return open
}

// add queues each zset of task behind the scan tasks of that zset. The
// zsets of a group task (scantask.Task.More) are scanned like tasks of
// their own; the task's offset finishes with the last of them.
func (w *worker) add(task scanTask) {
	keys := task.Keys()
	if len(keys) > 1 {
		left := len(keys)
		task.left = &left
	}
	for _, key := range keys {
		part := task
		part.Zset, part.More = key, nil
		z, ok := w.zsets[key]
		if !ok {
			z = &zsetScan{key: key, index: -1}
			w.zsets[key] = z
		}
		z.tasks = append(z.tasks, part)
		if len(z.tasks) == 1 {
			z.cur = newCursor()
			z.wake = time.Now()
			heap.Push(&w.wakes, z)
		}
	}
}

// step runs one step of the first scan task of every zset in group: it
// takes their due entries (next), loads their tasks (load) and delivers
// them together (deliver), and sets each zset's next wake; a scan task
// that is done finishes its offset and gives way to the zset's next one.
// It returns an error only when ctx ended first (the drain is over).
func (w *worker) step(ctx context.Context, group []*zsetScan) error {
	start := time.Now()
	var (
		ready   []entry
		errs    []error
		stepped []*zsetScan // whose task goes on after this step
	)
	if err := w.read(ctx, group); err != nil {
		w.s.log.Info("scan step cut short by the drain deadline", "partition", w.p.id, "zsets", len(group), "err", err)
		return err
	}
	for _, z := range group {
		due, done := w.next(z)
		switch {
		case done:
			w.finish(z, start)
		case len(due) > 0:
			for _, e := range due {
				ready = append(ready, entry{z: z, Entry: e})
			}
			z.wake = time.Now() // again at once: more may be due, or a read needed
			stepped = append(stepped, z)
		case len(z.cur.upcoming) > 0:
			z.wake, z.early = w.s.wakeFor(z.cur.upcoming[0].ExecAt)
			stepped = append(stepped, z)
		default:
			// A full read of parked entries: wait until some settle.
			z.wake = w.parkedWake()
			stepped = append(stepped, z)
		}
	}
	if len(ready) > 0 {
		ds, err := w.load(ctx, ready)
		if err == nil {
			err = w.waitDue(ctx, ready)
		}
		if err == nil {
			ds, err = w.control(ctx, ds)
		}
		if err == nil && len(ds) > 0 {
			err = w.deliver(ctx, ds)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	elapsed := time.Since(start)
	for _, z := range stepped {
		z.cur.busy += elapsed
		z.cur.stepped = true
	}
	if err := errors.Join(errs...); err != nil {
		w.s.log.Info("scan step cut short by the drain deadline", "partition", w.p.id, "zsets", len(group), "err", err)
		return err
	}
	return nil
}

// waitDue waits, after the load of a step that prefetched, until the
// latest exec_at of es: nothing is delivered before its exec_at. It
// returns an error only when ctx ended first.
func (w *worker) waitDue(ctx context.Context, es []entry) error {
	var latest int64
	for _, e := range es {
		latest = max(latest, e.ExecAt)
	}
	if err := retry.Sleep(ctx, time.Until(time.UnixMilli(latest))); err != nil {
		return fmt.Errorf("scanner: wait for due entries: %w", err)
	}
	return nil
}

// read prepares a step of group: for each zset whose entries read before
// ran out it removes what the zset settled (a read would return it again)
// and, unless its last read found nothing more up to until, reads it
// again, skipping parked entries. Removes and reads of the whole group go
// in one pipelined round trip each. It returns an error only when ctx
// ended first.
func (w *worker) read(ctx context.Context, group []*zsetScan) error {
	var (
		flush []*zsetScan
		again []*zsetScan
	)
	for _, z := range group {
		if len(z.cur.upcoming) > 0 {
			continue
		}
		flush = append(flush, z)
		if z.cur.more {
			again = append(again, z)
		}
	}
	if err := w.remove(ctx, flush); err != nil {
		return err
	}
	if len(again) == 0 {
		return nil
	}
	rs := make([]zset.Range, len(again))
	for i, z := range again {
		rs[i] = zset.Range{Key: z.key, Until: z.tasks[0].Until}
	}
	var read [][]zset.Entry
	err := w.s.stage.Do(ctx, "due", w.s.policy, func(ctx context.Context) (err error) {
		read, err = w.s.ix.DueMany(ctx, rs, w.s.cfg.BatchSize)
		return err
	})
	if err != nil {
		return fmt.Errorf("scanner: read %d zsets (%s...): %w", len(rs), rs[0].Key, err)
	}
	for i, z := range again {
		z.cur.more = len(read[i]) == w.s.cfg.BatchSize
		z.cur.upcoming = z.skipParked(read[i])
	}
	return nil
}

// next returns the entries of the first scan task's zset, up to its
// until, that are due now, or by its wake + Prefetch when z.early (the
// time that wake was for), within the Hold's cutoff, and moves them out
// of z.cur.upcoming; the caller loads them and delivers them once the
// latest is due (waitDue), never one before its ExecAt. A wake between
// reads (read) costs no Redis call. With nothing due it reports either done (nothing
// up to until is left but parked entries, and everything settled is
// removed) or, through z.cur.upcoming[0], when the next entry falls due.
func (w *worker) next(z *zsetScan) (due []zset.Entry, done bool) {
	c := &z.cur
	if len(c.upcoming) == 0 {
		return nil, !c.more
	}
	// Lowest score first: the due entries are a prefix.
	horizon := time.Now()
	if slot := z.wake.Add(w.s.prefetch()); z.early && slot.After(horizon) {
		horizon = slot // the coalesced time this wake was for
	}
	z.early = false
	now := w.s.cutoff(horizon.UnixMilli())
	n := 0
	for n < len(c.upcoming) && c.upcoming[n].ExecAt <= now {
		n++
	}
	if n == 0 {
		c.more = true // waiting: entries may arrive meanwhile
		return nil, false
	}
	due = c.upcoming[:n:n]
	c.upcoming = c.upcoming[n:]
	return due, false
}

// finish ends the first scan task of z: its offset may be committed,
// unless it is a part of a group task whose other zsets are not done yet.
func (w *worker) finish(z *zsetScan, stepStart time.Time) {
	z.cur.busy += time.Since(stepStart)
	t := z.tasks[0]
	if t.left != nil {
		*t.left--
	}
	if t.left == nil || *t.left == 0 {
		w.s.m.scanDuration.Observe(z.cur.busy.Seconds())
		w.s.m.scanTasks.WithLabelValues(resultDone).Inc()
		w.p.finish(t.offset)
	}
	z.tasks = z.tasks[1:]
	z.cur = newCursor()
	z.wake = time.Now()
}

// remove removes the settled entries of zs from their zsets in one
// pipelined call, retrying while ctx lives.
func (w *worker) remove(ctx context.Context, zs []*zsetScan) error {
	var rs []zset.Removal
	var n int
	for _, z := range zs {
		if len(z.settled) > 0 {
			rs = append(rs, zset.Removal{Key: z.key, Entries: z.settled})
			n += len(z.settled)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	err := w.s.stage.Do(ctx, "remove", w.s.policy, func(ctx context.Context) error {
		return w.s.ix.RemoveMany(ctx, rs)
	})
	if err != nil {
		return fmt.Errorf("scanner: remove %d entries from %d zsets (%s...): %w", n, len(rs), rs[0].Key, err)
	}
	for _, z := range zs {
		z.settled = z.settled[:0]
	}
	return nil
}

// drain ends the worker after a stop or a step cut short: it removes what
// every zset settled (produced entries must leave the index, or the next
// owner delivers them again) in one pipelined call within DrainTimeout/3
// after workCtx ended. Scan tasks that had started are counted as
// abandoned; their offsets stay unfinished. Parked deliveries are dropped:
// their entries stay in the index.
func (w *worker) drain(workCtx context.Context) {
	ctx, cancel := drain.Context(workCtx, w.s.cfg.DrainTimeout/3)
	defer cancel()
	var (
		started   int
		unremoved int
		settled   []*zsetScan
	)
	for _, z := range w.zsets {
		if len(z.tasks) > 0 && z.cur.stepped {
			started++
		}
		if len(z.settled) > 0 {
			settled = append(settled, z)
			unremoved += len(z.settled)
		}
	}
	if err := w.remove(ctx, settled); err != nil {
		w.s.log.Warn("produced entries not removed: the next owner delivers them again",
			"partition", w.p.id, "zsets", len(settled), "entries", unremoved, "err", err)
	} else {
		unremoved = 0
	}
	if n := len(w.parked); n > 0 {
		w.s.m.parked.Sub(float64(n))
		w.parked = nil
	}
	if started > 0 {
		w.s.m.scanTasks.WithLabelValues(resultAbandoned).Add(float64(started))
		w.s.log.Info("scans left for the next owner", "partition", w.p.id, "started", started,
			"held_zsets", len(w.zsets), "unremoved", unremoved)
	}
}

// wakeAt is when a worker steps a zset whose next entry is due at execAt
// (unix ms): at execAt, or, with Coalesce, at the next multiple of Coalesce,
// so that the zsets of a worker fall due together and share a step; in
// both cases prefetch() earlier, the time the step's load may take.
func (s *Scanner) wakeAt(execAt int64) time.Time {
	if c := s.cfg.Coalesce.Milliseconds(); c > 0 {
		execAt = (execAt + c - 1) / c * c
	}
	return time.UnixMilli(execAt).Add(-s.prefetch())
}

// prefetch is how long before its entries are due a step starts:
// Prefetch, at most Coalesce. A step waits for its latest entry, and with
// wakes Coalesce apart no other zset of the worker falls due meanwhile.
func (s *Scanner) prefetch() time.Duration {
	return max(min(s.cfg.Prefetch, s.cfg.Coalesce), 0)
}

// cutoff is the latest exec_at deliverable at now (unix ms): now, or less
// while Hold holds deliveries back.
func (s *Scanner) cutoff(now int64) int64 {
	if s.cfg.Hold == nil {
		return now
	}
	return s.cfg.Hold.Cutoff(now)
}

// wakeFor is when a worker steps a zset whose next entry, due at execAt,
// was not taken, and whether that step prefetches (zsetScan's early):
// wakeAt, or, when that has come and Hold holds the entry back, when Hold
// is next asked. (An entry whose wakeAt has come may just be due within
// the prefetch of a step at once, which did not prefetch.)
func (s *Scanner) wakeFor(execAt int64) (time.Time, bool) {
	t := s.wakeAt(execAt)
	if now := time.Now(); s.cfg.Hold != nil && !t.After(now) && s.cutoff(execAt) < execAt {
		return now.Add(s.cfg.Hold.Poll()), false
	}
	return t, true
}

// writeGrace is how long a write that started may go on after the step's
// context ended: kafka-go goes on producing a batch after WriteMessages
// returned ctx.Err(), so cutting the wait short leaves the outcome unknown
// and the entries in the index (the next owner may deliver them again).
func (s *Scanner) writeGrace() time.Duration { return s.cfg.DrainTimeout / 6 }

package scanner

import (
	"container/heap"
	"context"
	"fmt"
	"time"

	"github.com/delayq/delayq/internal/drain"
	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/scanner/schedule"
	"github.com/delayq/delayq/zset"
)

// zsetScan is what a worker holds of one zset: its scan tasks in offset
// order, the first of which is being scanned (from cur, whose Wake is when
// its next step is due), the entries settled and not yet removed, and the
// entries whose delivery is parked.
type zsetScan struct {
	key   string
	tasks []scanTask
	cur   schedule.Cursor // of tasks[0]
	// settled are entries delivered (or cancelled, missing, or sent to the
	// failed topic) and not yet removed from the zset. They are removed
	// before the zset is read again, before a task is done, and on stop.
	settled []zset.Entry
	// parked are the entries whose delivery waits to be written alone
	// (park.go); a read of the zset skips them.
	parked  map[zset.Entry]bool
	stepped bool          // tasks[0] has been stepped at least once
	busy    time.Duration // time tasks[0] spent in steps
	index   int           // in the worker's wake heap; -1 when not in it
}

// isParked reports whether e's delivery is parked (a read skips it).
func (z *zsetScan) isParked(e schedule.Entry) bool { return z.parked[zset.Entry(e)] }

// idle reports whether the worker can forget z.
func (z *zsetScan) idle() bool {
	return len(z.tasks) == 0 && len(z.settled) == 0 && len(z.parked) == 0
}

// wakeHeap orders zsets by wake time.
type wakeHeap []*zsetScan

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].cur.Wake.Before(h[j].cur.Wake) }
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
	s     *Scanner
	p     *partition
	zsets map[string]*zsetScan
	wakes wakeHeap // zsets with a scan task, by wake
	ld    loader   // reads rows, plans recurrences, holds (load.go)
	out   *sender  // writes, parks (deliver.go, park.go)
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
	w := newWorker(s, p)
	d := s.cfg.DrainTimeout
	workCtx, cancel := drain.Context(stopCtx, d-d/3)
	defer cancel()
	w.run(stopCtx, workCtx, queue)
}

// newWorker returns a worker of s for partition p.
func newWorker(s *Scanner, p *partition) *worker {
	return &worker{s: s, p: p, zsets: map[string]*zsetScan{}, ld: loader{s: s}, out: &sender{s: s}}
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
		parked := w.out.parked
		canStep := len(parked) < maxParked
		switch {
		case len(parked) > 0 && !parked[0].next.After(now):
			if err := w.retryParked(workCtx); err != nil {
				w.drain(workCtx)
				return
			}
			continue
		case canStep && len(w.wakes) > 0 && !w.wakes[0].cur.Wake.After(now):
			if err := w.stepWoken(workCtx, now); err != nil {
				w.drain(workCtx)
				return
			}
			continue
		case !open && len(w.wakes) == 0 && len(parked) == 0:
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
	for len(w.wakes) > 0 && !w.wakes[0].cur.Wake.After(now) && len(group) < maxGroup {
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
		next = w.wakes[0].cur.Wake
	}
	if parked := w.out.parked; len(parked) > 0 && (next.IsZero() || parked[0].next.Before(next)) {
		next = parked[0].next
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
			z.cur = schedule.NewCursor(time.Now())
			heap.Push(&w.wakes, z)
		}
	}
}

// step runs one step of the first scan task of every zset in group: it
// takes their due entries (schedule.Config.Next), loads their tasks (load),
// waits until they are due (schedule.WriteAt), applies the topics'
// controls (control) and delivers them together (deliver); Next sets each
// zset's next wake. A scan task that is done finishes its offset and gives
// way to the zset's next one. It returns an error only when ctx ended
// first (the drain is over).
func (w *worker) step(ctx context.Context, group []*zsetScan) error {
	start := time.Now()
	var (
		ready   []entry
		stepped []*zsetScan // whose task goes on after this step
	)
	if err := w.read(ctx, group); err != nil {
		w.s.log.Info("scan step cut short by the drain deadline", "partition", w.p.id, "zsets", len(group), "err", err)
		return err
	}
	for _, z := range group {
		st := w.s.plan.Next(&z.cur, time.Now())
		switch {
		case st.Done:
			w.finish(z, start)
			continue
		case st.Parked:
			// A full read of parked entries: wait until some settle.
			z.cur.Wake = w.out.parkedWake()
		}
		for _, e := range st.Due {
			ready = append(ready, entry{z: z, Entry: zset.Entry(e)})
		}
		stepped = append(stepped, z)
	}
	var err error
	if len(ready) > 0 {
		ds, lerr := w.ld.load(ctx, ready)
		err = lerr
		if err == nil {
			err = waitDue(ctx, ready)
		}
		if err == nil {
			ds, err = w.ld.control(ctx, ds)
		}
		if err == nil && len(ds) > 0 {
			err = w.out.deliver(ctx, ds)
		}
	}
	elapsed := time.Since(start)
	for _, z := range stepped {
		z.busy += elapsed
		z.stepped = true
	}
	if err != nil {
		w.s.log.Info("scan step cut short by the drain deadline", "partition", w.p.id, "zsets", len(group), "err", err)
		return err
	}
	return nil
}

// waitDue waits, after the load of a step that prefetched, until
// schedule.WriteAt of es: nothing is delivered before its exec_at. It
// returns an error only when ctx ended first.
func waitDue(ctx context.Context, es []entry) error {
	due := make([]schedule.Entry, len(es))
	for i, e := range es {
		due[i] = schedule.Entry(e.Entry)
	}
	if err := retry.Sleep(ctx, time.Until(time.UnixMilli(schedule.WriteAt(due)))); err != nil {
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
		f, r := z.cur.Read()
		if f {
			flush = append(flush, z)
		}
		if r {
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
		es := make([]schedule.Entry, len(read[i]))
		for j, e := range read[i] {
			es[j] = schedule.Entry(e)
		}
		z.cur.Got(es, w.s.cfg.BatchSize, z.isParked)
	}
	return nil
}

// finish ends the first scan task of z: its offset may be committed,
// unless it is a part of a group task whose other zsets are not done yet.
func (w *worker) finish(z *zsetScan, stepStart time.Time) {
	z.busy += time.Since(stepStart)
	t := z.tasks[0]
	if t.left != nil {
		*t.left--
	}
	if t.left == nil || *t.left == 0 {
		w.s.m.scanDuration.Observe(z.busy.Seconds())
		w.s.m.scanTasks.WithLabelValues(resultDone).Inc()
		w.p.finish(t.offset)
	}
	z.tasks = z.tasks[1:]
	z.cur = schedule.NewCursor(time.Now())
	z.stepped, z.busy = false, 0
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
		if len(z.tasks) > 0 && z.stepped {
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
	if n := len(w.out.parked); n > 0 {
		w.s.m.parked.Sub(float64(n))
		w.out.parked = nil
	}
	if started > 0 {
		w.s.m.scanTasks.WithLabelValues(resultAbandoned).Add(float64(started))
		w.s.log.Info("scans left for the next owner", "partition", w.p.id, "started", started,
			"held_zsets", len(w.zsets), "unremoved", unremoved)
	}
}

// writeGrace is how long a write that started may go on after the step's
// context ended: kafka-go goes on producing a batch after WriteMessages
// returned ctx.Err(), so cutting the wait short leaves the outcome unknown
// and the entries in the index (the next owner may deliver them again).
func (c *Config) writeGrace() time.Duration { return c.DrainTimeout / 6 }

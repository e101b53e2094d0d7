package scanner

import (
	"container/heap"
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/drain"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/scantask"
)

// partition tracks the offsets of one assigned partition: scan tasks are
// started in offset order and finish in any order; the commit point is the
// window's low-water mark, which never goes backwards.
type partition struct {
	id  int
	win *consumer.Window // safe for concurrent use

	mu   sync.Mutex
	done int64 // last offset committed, -1 when none yet
}

func newPartition(id int) *partition {
	return &partition{id: id, win: consumer.NewWindow(), done: -1}
}

func (p *partition) start(offset int64)  { p.win.Start(offset) }
func (p *partition) finish(offset int64) { p.win.Done(offset) }

// pending returns the offset to commit when it advanced past the last commit.
func (p *partition) pending() (int64, bool) {
	next, ok := p.win.Committed()
	p.mu.Lock()
	defer p.mu.Unlock()
	return next, ok && next > p.done
}

func (p *partition) committed(offset int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = max(p.done, offset)
}

// fetchMaxWait bounds how long a fetch waits for new scan tasks.
const fetchMaxWait = 500 * time.Millisecond

// job is a scan task and the offset of its message.
type job struct {
	task   scantask.Task
	offset int64
}

// consume reads scan tasks of one partition from offset and runs them on
// Workers goroutines until ctx or gctx is done; then it stops fetching, lets
// the tasks in flight finish for up to DrainTimeout and returns after every
// worker ended.
func (s *Scanner) consume(ctx, gctx context.Context, p *partition, offset int64) {
	log := s.log.With("partition", p.id)

	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(gctx, stop)()
	workCtx, cancelWork := drain.Context(stopCtx, s.cfg.DrainTimeout)
	defer cancelWork()

	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   s.cfg.Brokers,
		Topic:     s.cfg.Topic,
		Partition: p.id,
		MinBytes:  1,
		MaxBytes:  1 << 20,
		MaxWait:   fetchMaxWait,
	})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		// Unreachable for a fresh Reader; without a position nothing can be
		// read, so wait for the end of the generation.
		log.Error("set offset failed", "offset", offset, "err", err)
		<-stopCtx.Done()
		return
	}

	queues := make([]chan job, s.cfg.Workers)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan job, queueSize)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.work(stopCtx, workCtx, p, queues[i])
		}()
	}
	defer func() {
		for _, q := range queues {
			close(q)
		}
		wg.Wait()
	}()

	var failures int
	for {
		m, err := r.FetchMessage(stopCtx)
		if stopCtx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			log.Warn("fetch failed", "err", err)
			sleep(stopCtx, backoff(s.cfg.RetryBackoff, s.cfg.MaxBackoff, failures))
			continue
		}
		failures = 0
		p.start(m.Offset)
		t, err := scantask.Parse(m)
		if err != nil {
			s.m.scanTasks.WithLabelValues(resultInvalid).Inc()
			log.Warn("invalid scan task", "offset", m.Offset, "err", err)
			p.finish(m.Offset)
			continue
		}
		select {
		case queues[workerOf(t.Zset, len(queues))] <- job{task: t, offset: m.Offset}:
		case <-stopCtx.Done():
			return
		}
	}
}

// held is what a worker holds of one zset: its scan tasks in offset order,
// the first of which is being scanned, and when that one's next step is due.
type held struct {
	key   string // the zset
	jobs  []job
	st    *scanState // of jobs[0]
	wake  time.Time  // when the next step of jobs[0] is due
	index int        // in the wake heap
}

// wakeHeap orders held zsets by wake time.
type wakeHeap []*held

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].wake.Before(h[j].wake) }
func (h wakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *wakeHeap) Push(x any) { z := x.(*held); z.index = len(*h); *h = append(*h, z) }
func (h *wakeHeap) Pop() any {
	old := *h
	z := old[len(old)-1]
	*h = old[:len(old)-1]
	return z
}

// maxGroup caps the zsets a worker steps together.
const maxGroup = 32

// work runs the scan tasks of one queue. Tasks of one zset run one after the
// other, in offset order. Tasks of different zsets interleave: the worker
// takes every held zset whose next entry is due (the dispatcher looks one
// tick ahead, so most wait for their entries' exec_at in a timer heap) and
// delivers their due entries together, with one store Get and one write, so
// waiting never delays another zset and a busy worker batches more. When
// the queue is closed the worker finishes what it holds. After stop it
// starts nothing more and returns: held tasks stay unfinished, so the next
// owner reads them again, and a step in flight runs on under workCtx (the
// drain).
func (s *Scanner) work(stopCtx, workCtx context.Context, p *partition, queue <-chan job) {
	byZset := map[string]*held{}
	var due wakeHeap
	add := func(j job) {
		if z, ok := byZset[j.task.Zset]; ok {
			z.jobs = append(z.jobs, j)
			return
		}
		z := &held{key: j.task.Zset, jobs: []job{j}, st: &scanState{more: true}, wake: time.Now()}
		byZset[j.task.Zset] = z
		heap.Push(&due, z)
	}
	open := true
	// take adds what the queue holds, without waiting.
	take := func() {
		for open {
			select {
			case j, ok := <-queue:
				if open = ok; ok {
					add(j)
				}
			default:
				return
			}
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		take()
		if stopCtx.Err() != nil {
			s.abandon(workCtx, p, due)
			return
		}
		if now := time.Now(); len(due) > 0 && !due[0].wake.After(now) {
			var group []*held
			for len(due) > 0 && !due[0].wake.After(now) && len(group) < maxGroup {
				group = append(group, heap.Pop(&due).(*held))
			}
			if err := s.stepGroup(workCtx, p, group); err != nil {
				s.abandon(workCtx, p, append(due, group...))
				return
			}
			for _, z := range group {
				if len(z.jobs) == 0 {
					delete(byZset, z.key)
					continue
				}
				heap.Push(&due, z)
			}
			continue
		}
		if !open && len(due) == 0 {
			return
		}
		var wake <-chan time.Time
		if len(due) > 0 {
			timer.Reset(time.Until(due[0].wake))
			wake = timer.C
		}
		var in <-chan job
		if open {
			in = queue
		}
		select {
		case j, ok := <-in:
			if open = ok; ok {
				add(j)
			}
		case <-wake:
		case <-stopCtx.Done():
		}
		timer.Stop()
	}
}

// stepGroup runs one step of the first task of every zset in group: it
// takes their due entries (prepare), delivers them together (batch), and
// sets each zset's next wake; a task that is done finishes its offset and
// gives way to the zset's next task. It returns an error only when ctx
// ended first (the drain is over).
func (s *Scanner) stepGroup(ctx context.Context, p *partition, group []*held) error {
	start := time.Now()
	var (
		ready   []member
		errs    []error
		stepped []*held // whose task goes on after this step
	)
	for _, z := range group {
		j := z.jobs[0]
		rs, done, err := s.prepare(ctx, j.task, z.st)
		switch {
		case err != nil:
			errs = append(errs, err)
		case done:
			z.st.busy += time.Since(start)
			s.m.scanDuration.Observe(z.st.busy.Seconds())
			s.m.scanTasks.WithLabelValues(resultDone).Inc()
			p.finish(j.offset)
			z.jobs, z.st = z.jobs[1:], &scanState{more: true}
			z.wake = time.Now()
		case len(rs) == 0:
			z.wake = s.wakeAt(z.st.upcoming[0].ExecAt)
			stepped = append(stepped, z)
		default:
			ready = append(ready, members(j.task.Zset, rs)...)
			z.wake = time.Now() // again at once: more may be due, or a read needed
			stepped = append(stepped, z)
		}
	}
	if len(ready) > 0 {
		settled, err := s.batch(ctx, ready)
		byZset := make(map[string]*held, len(stepped))
		for _, z := range stepped {
			byZset[z.key] = z
		}
		for _, m := range settled {
			st := byZset[m.zset].st
			st.settled = append(st.settled, m.entry)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	elapsed := time.Since(start)
	for _, z := range stepped {
		z.st.busy += elapsed
	}
	if err := errors.Join(errs...); err != nil {
		s.log.Warn("scan step abandoned", "partition", p.id, "zsets", len(group), "err", err)
		return err
	}
	return nil
}

// abandon removes what the held scan tasks settled (produced entries must
// leave the index, or the next owner delivers them again) and counts the
// tasks that had started as abandoned; their offsets stay unfinished.
func (s *Scanner) abandon(ctx context.Context, p *partition, due []*held) {
	n := 0
	for _, z := range due {
		if len(z.jobs) == 0 {
			continue
		}
		if z.st.busy > 0 {
			n++
		}
		if err := s.flush(ctx, z.key, z.st); err != nil {
			s.log.Warn("settled entries not removed", "partition", p.id, "zset", z.key,
				"entries", len(z.st.settled), "err", err)
		}
	}
	if n > 0 {
		s.m.scanTasks.WithLabelValues(resultAbandoned).Add(float64(n))
		s.log.Info("scans left for the next owner", "partition", p.id, "started", n, "held_zsets", len(due))
	}
}

// workerOf maps a zset to one of n workers.
func workerOf(zset string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(zset))
	return int(h.Sum32() % uint32(n))
}

// wakeAt is when a worker steps a zset whose next entry is due at execAt
// (unix ms): at execAt, or, with Coalesce, at the next multiple of Coalesce,
// so that the zsets of a worker fall due together and share a step.
func (s *Scanner) wakeAt(execAt int64) time.Time {
	if c := s.cfg.Coalesce.Milliseconds(); c > 0 {
		execAt = (execAt + c - 1) / c * c
	}
	return time.UnixMilli(execAt)
}

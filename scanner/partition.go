package scanner

import (
	"container/heap"
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/drain"
	"github.com/delayq/delayq/dispatcher"
	dqkafka "github.com/delayq/delayq/kafka"
)

// partition tracks the offsets of one assigned partition: scan tasks are
// started in offset order and finish in any order; the commit point is the
// window's low-water mark, which never goes backwards.
type partition struct {
	id  int
	win *dqkafka.Window // safe for concurrent use

	mu   sync.Mutex
	done int64 // last offset committed, -1 when none yet
}

func newPartition(id int) *partition {
	return &partition{id: id, win: dqkafka.NewWindow(), done: -1}
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
	task   dispatcher.ScanTask
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
		t, err := dispatcher.ParseScanTask(m)
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

// work runs the scan tasks of one queue. Tasks of one zset run one after the
// other, in offset order; tasks of different zsets interleave: a step
// delivers what is due now, and a zset whose next entry is not due yet (the
// dispatcher looks one tick ahead) waits in a timer heap while the worker
// steps the others, so waiting never delays another zset. When the queue is
// closed the worker finishes what it holds. After stop it starts nothing
// more and returns: held tasks stay unfinished, so the next owner reads
// them again, and a step in flight runs on under workCtx (the drain).
func (s *Scanner) work(stopCtx, workCtx context.Context, p *partition, queue <-chan job) {
	byZset := map[string]*held{}
	var due wakeHeap
	add := func(j job) {
		if z, ok := byZset[j.task.Zset]; ok {
			z.jobs = append(z.jobs, j)
			return
		}
		z := &held{jobs: []job{j}, st: &scanState{more: true}, wake: time.Now()}
		byZset[j.task.Zset] = z
		heap.Push(&due, z)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	open := true
	for {
		if stopCtx.Err() != nil {
			s.abandon(workCtx, p, due)
			return
		}
		if len(due) > 0 && !due[0].wake.After(time.Now()) {
			z := due[0]
			j := z.jobs[0]
			next, done, err := s.step(workCtx, j.task, z.st)
			switch {
			case err != nil: // the drain is over
				s.m.scanTasks.WithLabelValues(resultAbandoned).Inc()
				s.log.Warn("scan abandoned", "partition", p.id, "offset", j.offset, "zset", j.task.Zset, "err", err)
				heap.Remove(&due, z.index)
				s.abandon(workCtx, p, due)
				return
			case done:
				s.m.scanDuration.Observe(z.st.busy.Seconds())
				s.m.scanTasks.WithLabelValues(resultDone).Inc()
				p.finish(j.offset)
				z.jobs, z.st, z.wake = z.jobs[1:], &scanState{more: true}, time.Now()
				if len(z.jobs) == 0 {
					delete(byZset, j.task.Zset)
					heap.Remove(&due, z.index)
				} else {
					heap.Fix(&due, z.index)
				}
			default:
				z.wake = next
				heap.Fix(&due, z.index)
			}
			if open { // take what arrived meanwhile, without waiting
				select {
				case j, ok := <-queue:
					if open = ok; ok {
						add(j)
					}
				default:
				}
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

// abandon removes what the held scan tasks settled (produced entries must
// leave the index, or the next owner delivers them again) and counts the
// tasks that had started as abandoned; their offsets stay unfinished.
func (s *Scanner) abandon(ctx context.Context, p *partition, due wakeHeap) {
	n := 0
	for _, z := range due {
		if z.st.busy > 0 {
			n++
		}
		if err := s.flush(ctx, z.jobs[0].task.Zset, z.st); err != nil {
			s.log.Warn("settled entries not removed", "partition", p.id, "zset", z.jobs[0].task.Zset,
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

package scanner

import (
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

// work runs the scan tasks of one queue in order. After stop, queued tasks are
// not started: their offsets stay unfinished, so the next owner reads them
// again.
func (s *Scanner) work(stopCtx, workCtx context.Context, p *partition, queue <-chan job) {
	for j := range queue {
		if stopCtx.Err() != nil {
			continue
		}
		if err := s.scan(workCtx, j.task); err != nil {
			s.m.scanTasks.WithLabelValues(resultAbandoned).Inc()
			s.log.Warn("scan abandoned", "partition", p.id, "offset", j.offset, "zset", j.task.Zset, "err", err)
			continue
		}
		p.finish(j.offset)
	}
}

// workerOf maps a zset to one of n workers.
func workerOf(zset string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(zset))
	return int(h.Sum32() % uint32(n))
}

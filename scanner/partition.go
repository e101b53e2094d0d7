package scanner

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/scantask"
)

// partition tracks the offsets of one assigned partition: scan tasks are
// started in offset order and finish in any order; the commit point is the
// window's low-water mark, which never goes backwards.
type partition struct {
	id  int
	win *consumer.Window // safe for concurrent use
	// owns reports whether a zset's scan tasks belong on this partition
	// (Scanner.owner); nil: all do.
	owns func(zset string, partition int) bool

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

// scanTask is a scan task read from the partition, with its offset.
type scanTask struct {
	scantask.Task
	offset int64
	// left counts the zsets of a group task not done yet (worker.add);
	// nil for a task of one zset.
	left *int
}

// consume reads the scan tasks of one partition from offset and hands each
// to worker workerOf(zset) until ctx or gctx is done; then it stops
// fetching and returns after every worker drained and ended.
func (s *Scanner) consume(ctx, gctx context.Context, p *partition, offset int64) {
	log := s.log.With("partition", p.id)

	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(gctx, stop)()

	r, err := consumer.NewPartitionReader(consumer.Partition{
		Brokers: s.cfg.Brokers, Auth: s.cfg.Auth, Topic: s.cfg.Topic, Partition: p.id, Offset: offset,
		// Below the preset's 10 MiB: a scan task is a small JSON, so 1 MiB
		// is thousands of them, far more than the workers' queues take;
		// a larger fetch would only hold more that a rebalance drops.
		MaxBytes: 1 << 20,
	})
	if err != nil {
		// Unreachable for a valid config and a fresh Reader; without a
		// reader nothing can be read, so wait for the end of the
		// generation.
		log.Error("set offset failed", "offset", offset, "err", err)
		<-stopCtx.Done()
		return
	}
	defer r.Close()

	queues := make([]chan scanTask, s.cfg.Workers)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan scanTask, queueSize)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.work(stopCtx, p, queues[i])
		}()
	}
	defer func() {
		for _, q := range queues {
			close(q)
		}
		wg.Wait()
	}()

	// A partition without scan tasks waits in its fetch: after a Kafka
	// outage, 5 s of waiting without an error end the stall.
	fetch := s.policy
	fetch.Idle = 5 * time.Second
	for {
		var m kafka.Message
		err := s.stage.Do(stopCtx, "fetch", fetch, func(ctx context.Context) (err error) {
			m, err = r.FetchMessage(ctx)
			return err
		})
		if err != nil { // stopped
			return
		}
		p.start(m.Offset)
		task, err := scantask.Parse(m)
		if err != nil {
			s.m.scanTasks.WithLabelValues(resultInvalid).Inc()
			log.Warn("invalid scan task", "offset", m.Offset, "err", err)
			p.finish(m.Offset)
			continue
		}
		if p.owns != nil && !p.owns(task.Zset, p.id) {
			// The topic grew and the zset's scan tasks now go to another
			// partition: its owner scans it.
			s.m.scanTasks.WithLabelValues(resultMoved).Inc()
			p.finish(m.Offset)
			continue
		}
		select {
		case queues[workerOf(task.Zset, len(queues))] <- scanTask{Task: task, offset: m.Offset}:
		case <-stopCtx.Done():
			return
		}
	}
}

// workerOf maps a zset to one of n workers.
func workerOf(zset string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(zset))
	return int(h.Sum32() % uint32(n))
}

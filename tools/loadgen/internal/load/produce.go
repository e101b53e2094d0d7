package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/snowflake"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
)

// maxChunk is the most messages one WriteMessages call carries.
const maxChunk = 1000

// chunk is the tasks [lo, hi) and the messages that carry them.
type chunk struct {
	lo   int
	msgs []kafka.Message
}

// produce writes n messages built by build(seq, now) with w, paced at rate
// messages/s (0: as fast as it goes) through `workers` concurrent
// WriteMessages callers. sent counts the messages acknowledged. It returns
// the time of the first and the end of the last write.
func produce(ctx context.Context, w *kafka.Writer, n int, rate float64, workers int,
	build func(seq int, now time.Time) kafka.Message, sent *atomic.Int64) (time.Time, time.Time, error) {
	size := maxChunk
	var every time.Duration
	if rate > 0 {
		size = min(max(int(rate/100), 1), maxChunk)
		every = time.Duration(float64(size) / rate * float64(time.Second))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	chunks := make(chan chunk, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c := range chunks {
				if err := w.WriteMessages(ctx, c.msgs...); err != nil {
					cancel(fmt.Errorf("produce tasks %d..%d: %w", c.lo, c.lo+len(c.msgs)-1, err))
					return
				}
				sent.Add(int64(len(c.msgs)))
			}
		})
	}
	start := time.Now()
	next := start
feed:
	for lo := 0; lo < n; lo += size {
		if every > 0 {
			if d := time.Until(next); d > 0 {
				select {
				case <-ctx.Done():
					break feed
				case <-time.After(d):
				}
			}
			next = next.Add(every)
		}
		now := time.Now()
		c := chunk{lo: lo, msgs: make([]kafka.Message, 0, min(size, n-lo))}
		for seq := lo; seq < min(lo+size, n); seq++ {
			c.msgs = append(c.msgs, build(seq, now))
		}
		select {
		case chunks <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(chunks)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return start, time.Now(), err
	}
	return start, time.Now(), nil
}

// taskSource builds the input messages of a run and records each task's
// due time in due before the message exists.
type taskSource struct {
	cfg   *Config
	value []byte
	node  *snowflake.Node
	burst int64 // unix ms of the burst second
	rng   *rand.Rand
	mu    sync.Mutex // guards rng
	tally *Tally     // records each task's due time
}

func newTaskSource(cfg *Config, start time.Time, tally *Tally) (*taskSource, error) {
	node, err := snowflake.NewNode(int64(start.UnixNano() % 1024))
	if err != nil {
		return nil, err
	}
	value := make([]byte, cfg.Payload)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	return &taskSource{
		cfg:   cfg,
		value: value,
		node:  node,
		burst: start.Add(cfg.BurstAfter).Truncate(time.Second).UnixMilli(),
		rng:   rand.New(rand.NewPCG(uint64(start.UnixNano()), 99)),
		tally: tally,
	}, nil
}

// task returns the input message of task seq, submitted at now, to topic.
func (s *taskSource) task(topic string, seq int, now time.Time) kafka.Message {
	s.mu.Lock()
	var at int64
	if s.cfg.Burst {
		at = s.burst + s.rng.Int64N(1000)
	} else {
		d := s.cfg.MinDelay
		if s.cfg.Span > 0 {
			d += time.Duration(s.rng.Int64N(int64(s.cfg.Span)))
		}
		at = now.Add(d).UnixMilli()
	}
	s.mu.Unlock()
	s.tally.SetDue(seq, at)
	var id string
	if s.cfg.IDs == IDsString {
		id = s.cfg.Run + "-" + strconv.Itoa(seq)
	} else {
		id = s.node.Generate().String()
	}
	return kafka.Message{
		Topic: topic,
		Key:   []byte(strconv.Itoa(seq)),
		Value: s.value,
		Headers: []kafka.Header{
			{Key: payload.HeaderTopic, Value: []byte(s.cfg.Topic)},
			{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(at, 10))},
			{Key: payload.HeaderID, Value: []byte(id)},
		},
		Time: now,
	}
}

package load

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/kafka/producer"
)

// Copier batching: ingest's loop minus the stores, with the batches
// ingest had when the goals were set against this baseline (up to 1,000
// messages, 20 ms after the first); Config.BaselineBatch changes the size.
const (
	DefaultBaselineBatch = 1000
	copyBatchWait        = 20 * time.Millisecond
)

// outTopic counts what reaches a baseline output topic.
type outTopic struct {
	n           atomic.Int64
	mu          sync.Mutex
	first, last int64 // record timestamps, unix ms
}

func (o *outTopic) add(m kafka.Message, _ time.Time) {
	ts := m.Time.UnixMilli()
	o.mu.Lock()
	if o.first == 0 || ts < o.first {
		o.first = ts
	}
	o.last = max(o.last, ts)
	o.mu.Unlock()
	o.n.Add(1)
}

func (o *outTopic) span() (int64, int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.first, o.last
}

// runBaseline copies the run's messages from one topic to another with a
// plain kafka-go consumer group and writer: first while they are produced,
// then again from the backlog with a fresh group. It returns the topics it
// created.
func runBaseline(ctx context.Context, cfg *Config) (*Baseline, []string, error) {
	in, out, drain := cfg.Topic+"-bin", cfg.Topic+"-bout", cfg.Topic+"-bdrain"
	names := []string{in, out, drain}
	specs := make([]admin.Spec, len(names))
	for i, t := range names {
		specs[i] = admin.Spec{Name: t, Partitions: cfg.Partitions}
	}
	if err := admin.Ensure(ctx, cfg.Brokers, cfg.auth, specs); err != nil {
		return nil, names, err
	}
	bl := &Baseline{Batch: cfg.BaselineBatch}
	start := time.Now()
	src, err := newTaskSource(cfg, start, NewTally(cfg.Tasks))
	if err != nil {
		return nil, names, err
	}

	// Streaming copy: the copier runs while the input is produced.
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var outs outTopic
	waitOut := collect(cctx, cfg.Brokers, cfg.auth, out, cfg.Partitions, outs.add)
	copyErr := make(chan error, 1)
	go func() { copyErr <- copyTopic(cctx, cfg.Brokers, cfg.auth, cfg.Run+"-copy", in, out, cfg.BaselineBatch) }()

	w := producer.New(producer.Config{Brokers: cfg.Brokers, Auth: cfg.auth})
	defer w.Close()
	// A warm-up message proves the copier has joined its group.
	warm := kafka.Message{Topic: in, Key: []byte("warmup"), Value: []byte("warmup"), Time: time.Now()}
	if err := w.WriteMessages(ctx, warm); err != nil {
		return nil, names, err
	}
	if err := waitCount(ctx, &outs.n, 1, time.Minute, copyErr); err != nil {
		return nil, names, fmt.Errorf("copier warm-up: %w", err)
	}

	var sent atomic.Int64
	stopProgress := progress(cfg, start, func() string {
		return fmt.Sprintf("baseline: produced %d/%d  copied %d", sent.Load(), cfg.Tasks, outs.n.Load()-1)
	})
	pStart, pEnd, err := produce(ctx, w, cfg.Tasks, cfg.Rate, cfg.Producers, func(seq int, now time.Time) kafka.Message {
		return src.task(in, seq, now)
	}, &sent)
	if err != nil {
		stopProgress()
		return nil, names, err
	}
	bl.ProduceRate = float64(cfg.Tasks) / pEnd.Sub(pStart).Seconds()
	err = waitCount(ctx, &outs.n, int64(cfg.Tasks)+1, cfg.AcceptTimeout, copyErr)
	stopProgress()
	if err != nil {
		return nil, names, fmt.Errorf("streaming copy: %w", err)
	}
	_, last := outs.span()
	bl.Copied = cfg.Tasks
	bl.CopySeconds = float64(last-pStart.UnixMilli()) / 1000
	bl.CopyRate = float64(cfg.Tasks) / bl.CopySeconds
	stop()
	waitOut()
	<-copyErr

	// Backlog copy: a fresh group copies the whole input again.
	dctx, stopDrain := context.WithCancel(ctx)
	defer stopDrain()
	var drained outTopic
	waitDrain := collect(dctx, cfg.Brokers, cfg.auth, drain, cfg.Partitions, drained.add)
	drainErr := make(chan error, 1)
	go func() {
		drainErr <- copyTopic(dctx, cfg.Brokers, cfg.auth, cfg.Run+"-drain", in, drain, cfg.BaselineBatch)
	}()
	dStart := time.Now()
	stopProgress = progress(cfg, dStart, func() string {
		return fmt.Sprintf("baseline: backlog copied %d/%d", drained.n.Load(), cfg.Tasks+1)
	})
	err = waitCount(ctx, &drained.n, int64(cfg.Tasks)+1, cfg.AcceptTimeout, drainErr)
	stopProgress()
	if err != nil {
		return nil, names, fmt.Errorf("backlog copy: %w", err)
	}
	first, last := drained.span()
	bl.Drained = cfg.Tasks + 1
	bl.DrainSeconds = float64(last-first) / 1000
	bl.DrainRate = float64(bl.Drained) / bl.DrainSeconds
	stopDrain()
	waitDrain()
	<-drainErr
	fmt.Fprintf(cfg.Progress, "baseline: produce %.0f/s, copy %.0f/s, backlog copy %.0f/s\n", bl.ProduceRate, bl.CopyRate, bl.DrainRate)
	return bl, names, nil
}

// waitCount waits until n reaches want, the copier fails or timeout passes.
func waitCount(ctx context.Context, n *atomic.Int64, want int64, timeout time.Duration, failed <-chan error) error {
	deadline := time.Now().Add(timeout)
	for n.Load() < want {
		select {
		case err := <-failed:
			return fmt.Errorf("copier stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d after %v", n.Load(), want, timeout)
		}
		if !sleep(ctx, 10*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

// copyTopic is the pass-through: a kafka-go consumer-group reader on from,
// batches of up to size messages closed copyBatchWait after their first,
// each written to `to` with a RequireAll writer and then committed, until
// ctx ends.
func copyTopic(ctx context.Context, brokers []string, auth *kafkaauth.Auth, group, from, to string, size int) error {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: brokers, Dialer: auth.Dialer(0), GroupID: group, Topic: from, StartOffset: kafka.FirstOffset,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 500 * time.Millisecond, QueueCapacity: size,
		HeartbeatInterval: consumer.HeartbeatInterval, SessionTimeout: consumer.SessionTimeout,
		JoinGroupBackoff: consumer.JoinBackoff,
	})
	defer r.Close()
	w := producer.New(producer.Config{Brokers: brokers, Auth: auth})
	defer w.Close()
	batch := make([]kafka.Message, 0, size)
	for {
		batch = batch[:0]
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return err
		}
		batch = append(batch, m)
		bctx, cancel := context.WithTimeout(ctx, copyBatchWait)
		for len(batch) < size {
			m, err := r.FetchMessage(bctx)
			if err != nil {
				break
			}
			batch = append(batch, m)
		}
		cancel()
		now := time.Now()
		msgs := make([]kafka.Message, len(batch))
		for i, m := range batch {
			msgs[i] = kafka.Message{Topic: to, Key: m.Key, Value: m.Value, Headers: m.Headers, Time: now}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			return err
		}
		if err := r.CommitMessages(ctx, batch...); err != nil {
			return err
		}
	}
}

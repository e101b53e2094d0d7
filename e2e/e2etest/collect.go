package e2etest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/topics"
)

// Submit produces a workload in its order: the cancels that precede their
// tasks, the tasks (with the malformed messages), the cancels that follow.
func (e *Env) Submit(ctx context.Context, w Workload) {
	e.T.Helper()
	e.Produce(ctx, w.Early)
	e.Produce(ctx, w.Tasks)
	e.Produce(ctx, w.Late)
}

// Produce writes input messages (to delay-input unless they name a topic)
// with RequireAll, and fails the test on an error.
func (e *Env) Produce(ctx context.Context, msgs []kafka.Message) {
	e.T.Helper()
	w := producer.New(producer.Config{Brokers: e.Brokers})
	defer w.Close()
	for chunk := range slices.Chunk(msgs, 1000) {
		for i := range chunk {
			if chunk[i].Topic == "" {
				chunk[i].Topic = topics.Input
			}
			if chunk[i].Time.IsZero() {
				chunk[i].Time = time.Now()
			}
		}
		if err := w.WriteMessages(ctx, chunk...); err != nil {
			e.T.Fatalf("produce: %v", err)
		}
	}
}

// Received is one message read from a topic, with the time it was read.
type Received struct {
	Msg kafka.Message
	At  time.Time
}

// Collector reads every partition of a topic, from where each ended when
// the collector started, until the test ends. It reads partitions
// directly (no consumer group), so it sees each message once, through
// broker restarts too.
type Collector struct {
	mu   sync.Mutex
	msgs []Received
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// Collect creates topic when missing (4 partitions, the brokers' default
// replication factor) and collects it.
func (e *Env) Collect(topic string) *Collector {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := admin.Ensure(ctx, e.Brokers, nil, []admin.Spec{{Name: topic, Partitions: 4}}); err != nil {
		e.T.Fatalf("create %s: %v", topic, err)
	}
	ends, err := endOffsets(ctx, e.Brokers, topic)
	if err != nil {
		e.T.Fatalf("collect %s: %v", topic, err)
	}
	rctx, stop := context.WithCancel(context.Background())
	c := &Collector{stop: stop}
	for p, end := range ends {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: e.Brokers, Topic: topic, Partition: p,
			MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond,
		})
		if err := r.SetOffset(end); err != nil {
			e.T.Fatalf("collect %s/%d: %v", topic, p, err)
		}
		c.wg.Add(1)
		go c.read(rctx, r)
	}
	e.T.Cleanup(c.Close)
	return c
}

func (c *Collector) read(ctx context.Context, r *kafka.Reader) {
	defer c.wg.Done()
	defer r.Close()
	next := int64(-1)
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// A broker that is away: the reader reconnects by itself.
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if m.Offset < next {
			continue // read again after a reconnect
		}
		next = m.Offset + 1
		c.mu.Lock()
		c.msgs = append(c.msgs, Received{Msg: m, At: time.Now()})
		c.mu.Unlock()
	}
}

// Close stops reading; it is idempotent.
func (c *Collector) Close() {
	c.stop()
	c.wg.Wait()
}

// Snapshot returns what was read so far.
func (c *Collector) Snapshot() []Received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs)
}

// Len returns how many messages were read so far.
func (c *Collector) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

// endOffsets returns the next offset of each partition of topic, by
// partition number. A topic created a moment ago has no leaders yet: it
// retries until ctx ends.
func endOffsets(ctx context.Context, brokers []string, topic string) ([]int64, error) {
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	for {
		ends, err := tryEndOffsets(ctx, client, topic)
		if err == nil {
			return ends, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tryEndOffsets(ctx context.Context, client *kafka.Client, topic string) ([]int64, error) {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) == 0 {
		return nil, fmt.Errorf("metadata of %s: %v", topic, md.Topics)
	}
	n := len(md.Topics[0].Partitions)
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for p := range n {
		req.Topics[topic] = append(req.Topics[topic], kafka.LastOffsetOf(p))
	}
	res, err := client.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	ends := make([]int64, n)
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("list offsets of partition %d: %w", po.Partition, po.Error)
		}
		ends[po.Partition] = po.LastOffset
	}
	return ends, nil
}

// WaitFor polls cond until it holds, failing the test after timeout.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// WaitProgress polls count until it reaches want, failing the test when it
// did not grow for stall: for work whose pace is the machine's (a
// rate-limited release on a loaded test machine), where a fixed deadline
// measures the load and a stall is what fails.
func WaitProgress(tb testing.TB, stall time.Duration, what string, want int, count func() int) {
	tb.Helper()
	last, moved := count(), time.Now()
	for last < want {
		if time.Since(moved) > stall {
			tb.Fatalf("%s: %d of %d, none more for %v", what, last, want, stall)
		}
		time.Sleep(250 * time.Millisecond)
		if n := count(); n > last {
			last, moved = n, time.Now()
		}
	}
}

// Header returns the value of m's header key, or "".
func Header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Percentile of sorted durations, p in [0,1].
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}

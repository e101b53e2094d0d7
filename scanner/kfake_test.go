package scanner

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// A Kafka outage is never counted towards MaxAttempts and no valid task is
// refused for it (issue 10), also for a topic missing from the writers'
// metadata cache: kafka-go answers "unknown topic" for it from the cache
// (producer.New does not auto-create topics), and the single writer's
// answers are confirmed by the brokers (confirmed), which answer the dial
// error. The brokers here are kfake's, stopped and started again on the
// same port.
func TestKafkaDownIsNotUnknownTopic(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	addrs := cluster.ListenAddrs()
	_, port, _ := net.SplitHostPort(addrs[0])
	w := producer.New(producer.Config{Brokers: addrs})
	defer w.Close()
	single := producer.New(producer.Config{Brokers: addrs, BatchSize: 1})
	defer single.Close()
	ctx := context.Background()
	if err := w.WriteMessages(ctx, record.FromMessage(payload.Deliverable(task("warm", "orders", 1)))); err != nil {
		t.Fatal(err) // the writers' metadata cache now knows "orders" only
	}
	cluster.Close() // Kafka goes down

	ix, store := &memIndex{}, payload.NewMemory()
	s, err := New(Config{Brokers: addrs, MaxAttempts: 2, SingleWriter: confirmed{Writer: single, brokers: addrs}, Registerer: prometheus.NewRegistry()}, ix, store, w)
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.Backoff.Base, s.cfg.Backoff.Max = time.Millisecond, 5*time.Millisecond
	s.policy.Backoff = s.cfg.Backoff
	now := time.Now()
	tk := task("late", "created-later", now.Add(-time.Second).UnixMilli())
	env := &env{t: t, ix: ix, store: store}
	env.put("z", []payload.Task{tk})

	done := make(chan struct{})
	go func() {
		defer close(done)
		env.s = s
		env.scan(ctx, scantask.Task{Zset: "z", Until: now.UnixMilli()})
	}()
	time.Sleep(time.Second) // hundreds of write attempts against no broker

	n, _ := strconv.Atoi(port)
	cluster, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(n),
		kfake.SeedTopics(1, "orders", "created-later", topics.Failed))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the task was not delivered after Kafka came back")
	}
	if v := value(s.m.failed); v != 0 {
		t.Errorf("%v tasks sent to the failed topic for an outage", v)
	}
	if v := value(s.m.delivered); v != 1 {
		t.Errorf("delivered_total = %v, want 1", v)
	}
}

// recorder keeps the messages its writer wrote.
type recorder struct {
	Writer
	mu   sync.Mutex
	msgs []kafka.Message
}

func (r *recorder) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	err := r.Writer.WriteMessages(ctx, msgs...)
	if err == nil {
		r.mu.Lock()
		r.msgs = append(r.msgs, msgs...)
		r.mu.Unlock()
	}
	return err
}

// TestMissingTopicRefusedNotCreated: on brokers that would auto-create
// topics, a task for a topic that does not exist is not delivered by
// creating it: after MaxAttempts "unknown topic" answers, confirmed by the
// brokers, it goes to the failed topic with the reason, and the topic
// still does not exist.
func TestMissingTopicRefusedNotCreated(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(),
		kfake.SeedTopics(1, "orders", topics.Failed))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	addrs := cluster.ListenAddrs()
	w := producer.New(producer.Config{Brokers: addrs})
	defer w.Close()
	single := producer.New(producer.Config{Brokers: addrs, BatchSize: 1})
	defer single.Close()
	rec := &recorder{Writer: confirmed{Writer: single, brokers: addrs}}
	ix, store := &memIndex{}, payload.NewMemory()
	s, err := New(Config{Brokers: addrs, MaxAttempts: 2, SingleWriter: rec, Registerer: prometheus.NewRegistry()}, ix, store, w)
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.Backoff.Base, s.cfg.Backoff.Max = time.Millisecond, 5*time.Millisecond
	s.policy.Backoff = s.cfg.Backoff
	now := time.Now()
	env := &env{t: t, ix: ix, store: store, s: s}
	env.put("z", []payload.Task{task("ok", "orders", now.UnixMilli()), task("lost", "never-made", now.UnixMilli())})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env.scan(ctx, scantask.Task{Zset: "z", Until: now.UnixMilli()})

	if v := value(s.m.delivered); v != 1 {
		t.Errorf("delivered_total = %v, want 1", v)
	}
	if v := value(s.m.failed); v != 1 {
		t.Errorf("failed_total = %v, want 1", v)
	}
	var reason string
	for _, m := range rec.msgs {
		if m.Topic == topics.Failed {
			for _, h := range m.Headers {
				if h.Key == payload.HeaderError {
					reason = string(h.Value)
				}
			}
		}
	}
	if !strings.Contains(reason, "Unknown Topic Or Partition") {
		t.Errorf("failed message reason %q, want the unknown topic", reason)
	}
	if missing, err := admin.Missing(ctx, addrs, nil, "never-made"); err != nil || !missing {
		t.Errorf("never-made: Missing = %v, %v; the scanner created it", missing, err)
	}
}

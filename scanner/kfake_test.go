package scanner

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/kafka/topics"
	"github.com/delayq/delayq/payload"
)

// kafka-go answers the dial error, not "unknown topic", while the brokers
// are unreachable, also for a topic missing from its metadata cache, when
// it asks the brokers about such topics (producer.New): a Kafka outage is
// never counted towards MaxAttempts and no valid task is refused for it
// (issue 10). The brokers here are kfake's, stopped and started again on
// the same port.
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
	if err := w.WriteMessages(ctx, payload.Deliverable(task("warm", "orders", 1))); err != nil {
		t.Fatal(err) // the writers' metadata cache now knows "orders" only
	}
	cluster.Close() // Kafka goes down

	ix, store := &memIndex{}, payload.NewMemory()
	s, err := New(Config{Brokers: addrs, MaxAttempts: 2, SingleWriter: single, Registerer: prometheus.NewRegistry()}, ix, store, w)
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

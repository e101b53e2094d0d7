package admin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/topics"
)

func TestDefaultTopics(t *testing.T) {
	specs := Defaults(6)
	want := map[string]bool{topics.Input: true, topics.Slow: true, topics.Scan: true, topics.Failed: true}
	if len(specs) != len(want) {
		t.Fatalf("Defaults = %v", specs)
	}
	for _, s := range specs {
		if !want[s.Name] || s.Partitions != 6 || s.ReplicationFactor != 0 {
			t.Fatalf("unexpected spec %+v", s)
		}
	}
}

// TestEnsureTopicsFake runs Ensure twice against an in-process kfake
// cluster: the second call finds the topics and succeeds.
func TestEnsureTopicsFake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	brokers := c.ListenAddrs()
	specs := []Spec{{Name: "a", Partitions: 3, ReplicationFactor: 1}, {Name: "b", Partitions: 1, ReplicationFactor: 1}}
	for i := range 2 {
		if err := Ensure(ctx, brokers, nil, specs); err != nil {
			t.Fatalf("Ensure call %d: %v", i+1, err)
		}
	}
	conn, err := kafka.DialContext(ctx, "tcp", brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions("a", "b")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, p := range parts {
		count[p.Topic]++
	}
	if count["a"] != 3 || count["b"] != 1 {
		t.Fatalf("partitions = %v, want a:3 b:1", count)
	}
	if err := Ensure(ctx, nil, nil, specs); !errors.Is(err, ErrCreate) {
		t.Fatalf("Ensure without brokers = %v", err)
	}
}

// TestMissing: Missing tells a missing topic from an existing one without
// creating it, and an unreachable cluster is an error, not a missing topic.
func TestMissing(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	brokers := c.ListenAddrs()
	for _, tt := range []struct {
		topic string
		want  bool
	}{{"orders", false}, {"made-up", true}, {"made-up", true}} {
		if got, err := Missing(ctx, brokers, nil, tt.topic); err != nil || got != tt.want {
			t.Errorf("Missing(%s) = %v, %v; want %v", tt.topic, got, err, tt.want)
		}
	}
	c.Close()
	if got, err := Missing(ctx, brokers, nil, "orders"); err == nil {
		t.Errorf("Missing with the cluster down = %v, nil; want an error", got)
	}
}

package topics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestInternal(t *testing.T) {
	tests := []struct {
		topic string
		want  bool
	}{
		{Input, true},
		{Slow, true},
		{Scan, true},
		{Failed, true},
		{"__consumer_offsets", true},
		{"__anything", true},
		{"orders", false},
		{"delay-input2", false},
		{"_single", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := Internal(tt.topic); got != tt.want {
			t.Errorf("Internal(%q) = %v, want %v", tt.topic, got, tt.want)
		}
	}
}

func TestDefaultTopics(t *testing.T) {
	specs := Defaults(6)
	want := map[string]bool{Input: true, Slow: true, Scan: true, Failed: true}
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

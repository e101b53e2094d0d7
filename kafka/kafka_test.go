package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	kgo "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestInternal(t *testing.T) {
	tests := []struct {
		topic string
		want  bool
	}{
		{TopicInput, true},
		{TopicInputSlow, true},
		{TopicScan, true},
		{TopicFailed, true},
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
	specs := DefaultTopics(6)
	want := map[string]bool{TopicInput: true, TopicInputSlow: true, TopicScan: true, TopicFailed: true}
	if len(specs) != len(want) {
		t.Fatalf("DefaultTopics = %v", specs)
	}
	for _, s := range specs {
		if !want[s.Name] || s.Partitions != 6 || s.ReplicationFactor != 0 {
			t.Fatalf("unexpected spec %+v", s)
		}
	}
}

func TestNewWriter(t *testing.T) {
	w := NewWriter(WriterConfig{})
	defer w.Close()
	if w.RequiredAcks != kgo.RequireAll {
		t.Errorf("RequiredAcks = %v, want RequireAll", w.RequiredAcks)
	}
	if w.BatchTimeout != 5*time.Millisecond {
		t.Errorf("BatchTimeout = %v, want 5ms", w.BatchTimeout)
	}
	if _, ok := w.Balancer.(*kgo.Hash); !ok {
		t.Errorf("Balancer = %T, want *kafka.Hash", w.Balancer)
	}
	if w.Topic != "" || !w.AllowAutoTopicCreation || w.Async {
		t.Errorf("Topic %q, AllowAutoTopicCreation %v, Async %v", w.Topic, w.AllowAutoTopicCreation, w.Async)
	}
	if w.Addr.String() != "127.0.0.1:9092" || w.BatchSize != 1000 {
		t.Errorf("Addr %v, BatchSize %d", w.Addr, w.BatchSize)
	}
	w2 := NewWriter(WriterConfig{Brokers: []string{"a:1", "b:2"}, BatchSize: 10, BatchTimeout: time.Second, Async: true})
	defer w2.Close()
	if w2.BatchSize != 10 || w2.BatchTimeout != time.Second || !w2.Async || w2.Addr.String() != "a:1,b:2" {
		t.Errorf("configured writer: %+v", w2)
	}
}

func TestReaderConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ReaderConfig
		wantErr bool
		check   func(t *testing.T, rc kgo.ReaderConfig)
	}{
		{"defaults", ReaderConfig{GroupID: "g", Topics: []string{"t"}}, false, func(t *testing.T, rc kgo.ReaderConfig) {
			if rc.Topic != "t" || rc.GroupTopics != nil || rc.MinBytes != 1 || rc.MaxBytes != 10<<20 ||
				rc.MaxWait != 500*time.Millisecond || rc.CommitInterval != 0 || rc.StartOffset != kgo.FirstOffset ||
				rc.Brokers[0] != "127.0.0.1:9092" {
				t.Errorf("defaults: %+v", rc)
			}
		}},
		{"two topics", ReaderConfig{GroupID: "g", Topics: []string{TopicInput, TopicInputSlow}, CommitInterval: time.Second}, false, func(t *testing.T, rc kgo.ReaderConfig) {
			if rc.Topic != "" || len(rc.GroupTopics) != 2 || rc.CommitInterval != time.Second {
				t.Errorf("two topics: %+v", rc)
			}
		}},
		{"no group", ReaderConfig{Topics: []string{"t"}}, true, nil},
		{"no topics", ReaderConfig{GroupID: "g"}, true, nil},
		{"min above max", ReaderConfig{GroupID: "g", Topics: []string{"t"}, MinBytes: 10, MaxBytes: 5}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, err := tt.cfg.Config()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Config() error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrReaderConfig) {
					t.Fatalf("error %v does not wrap ErrReaderConfig", err)
				}
				return
			}
			tt.check(t, rc)
		})
	}
}

// TestEnsureTopicsFake runs EnsureTopics twice against an in-process kfake
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
	specs := []TopicSpec{{Name: "a", Partitions: 3, ReplicationFactor: 1}, {Name: "b", Partitions: 1, ReplicationFactor: 1}}
	for i := range 2 {
		if err := EnsureTopics(ctx, brokers, specs); err != nil {
			t.Fatalf("EnsureTopics call %d: %v", i+1, err)
		}
	}
	conn, err := kgo.DialContext(ctx, "tcp", brokers[0])
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
	if err := EnsureTopics(ctx, nil, specs); !errors.Is(err, ErrCreateTopics) {
		t.Fatalf("EnsureTopics without brokers = %v", err)
	}
}

package topics

import (
	"context"
	"errors"
	"strings"
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
		{"_schemas", true},
		{"_confluent-command", true},
		{"_confluent-metrics", true},
		{"connect-configs", true},
		{"connect-offsets", true},
		{"connect-status", true},
		{"__transaction_state", true},
		{"connect-mine", false},
	}
	for _, tt := range tests {
		if got := Internal(tt.topic); got != tt.want {
			t.Errorf("Internal(%q) = %v, want %v", tt.topic, got, tt.want)
		}
	}
}

func TestAllow(t *testing.T) {
	tests := []struct {
		patterns []string
		allowed  []string
		refused  []string
	}{
		{nil, []string{"orders", "orders.eu", "a_b", "connect"},
			[]string{"_schemas", "connect-configs", "connect-offsets", "connect-status", "_confluent-command",
				"__consumer_offsets", "__transaction_state", Input, Slow, Scan, Failed, "_private", "connect-mine"}},
		{[]string{"orders", "billing.*"}, []string{"orders", "billing.", "billing.eu"},
			[]string{"orders.eu", "billing", "payments", "_private"}},
		{[]string{"_private", "connect-mine"}, []string{"_private", "connect-mine"}, []string{"_schemas", "orders"}},
		{[]string{"*"}, []string{"orders", "_private", "connect-mine"},
			[]string{"_schemas", "_confluent-command", "connect-configs", "__consumer_offsets", Input, Failed}},
		{[]string{"_*", "delay-*"}, []string{"_private", "delay-x"}, []string{"_schemas", "__x", Input, Scan}},
	}
	for _, tt := range tests {
		allow := Allow(tt.patterns)
		for _, topic := range tt.allowed {
			if !allow(topic) {
				t.Errorf("Allow(%q)(%q) = false, want true", tt.patterns, topic)
			}
		}
		for _, topic := range tt.refused {
			if allow(topic) {
				t.Errorf("Allow(%q)(%q) = true, want false", tt.patterns, topic)
			}
		}
	}
	if err := CheckPatterns([]string{"orders", "orders.*", "*", "_x"}); err != nil {
		t.Errorf("CheckPatterns: %v", err)
	}
	err := CheckPatterns([]string{"bad topic", "a*b", "**", "ok"})
	for _, p := range []string{`"bad topic"`, `"a*b"`, `"**"`} {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("CheckPatterns error %v does not name %s", err, p)
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

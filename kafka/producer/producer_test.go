package producer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/kafkaauth"
)

func TestNew(t *testing.T) {
	w := New(Config{})
	defer w.Close()
	if w.RequiredAcks != kafka.RequireAll {
		t.Errorf("RequiredAcks = %v, want RequireAll", w.RequiredAcks)
	}
	if w.BatchTimeout != 5*time.Millisecond {
		t.Errorf("BatchTimeout = %v, want 5ms", w.BatchTimeout)
	}
	if _, ok := w.Balancer.(*kafka.Hash); !ok {
		t.Errorf("Balancer = %T, want *kafka.Hash", w.Balancer)
	}
	if w.Topic != "" || w.AllowAutoTopicCreation || w.Async {
		t.Errorf("Topic %q, AllowAutoTopicCreation %v, Async %v", w.Topic, w.AllowAutoTopicCreation, w.Async)
	}
	if tr, ok := w.Transport.(*kafka.Transport); !ok || tr.MetadataTTL != time.Second {
		t.Errorf("Transport = %+v, want one whose leaders are 1 s old at most", w.Transport)
	}
	if w.Addr.String() != "127.0.0.1:9092" || w.BatchSize != 1000 {
		t.Errorf("Addr %v, BatchSize %d", w.Addr, w.BatchSize)
	}
	if w.Transport != kafkaauth.Plaintext() {
		t.Errorf("Transport %+v without a ClientID, want the shared plaintext one", w.Transport)
	}
	w2 := New(Config{Brokers: []string{"a:1", "b:2"}, BatchSize: 10, BatchTimeout: time.Second, Async: true, ClientID: "delayd/v1.2.3", AutoCreateTopics: true})
	defer w2.Close()
	if w2.BatchSize != 10 || w2.BatchTimeout != time.Second || !w2.Async || w2.Addr.String() != "a:1,b:2" || !w2.AllowAutoTopicCreation {
		t.Errorf("configured writer: %+v", w2)
	}
	if tr, ok := w2.Transport.(*kafka.Transport); !ok || tr.ClientID != "delayd/v1.2.3" || tr.MetadataTTL != time.Second {
		t.Errorf("Transport %+v, want ClientID delayd/v1.2.3", w2.Transport)
	}
}

// TestNoAutoCreate: on brokers that would auto-create a topic, a write to
// a topic that does not exist fails with "unknown topic" and creates
// nothing, unless AutoCreateTopics is set (embedded mode).
func TestNoAutoCreate(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	brokers := c.ListenAddrs()
	w := New(Config{Brokers: brokers})
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Topic: "orders", Value: []byte("v")}); err != nil {
		t.Fatalf("write to an existing topic: %v", err)
	}
	err = w.WriteMessages(ctx, kafka.Message{Topic: "made-up", Value: []byte("v")})
	if !errors.Is(err, kafka.UnknownTopicOrPartition) {
		t.Fatalf("write to a missing topic: %v, want UnknownTopicOrPartition", err)
	}
	if missing, err := admin.Missing(ctx, brokers, nil, "made-up"); err != nil || !missing {
		t.Fatalf("after the write: Missing = %v, %v; the writer created the topic", missing, err)
	}

	auto := New(Config{Brokers: brokers, AutoCreateTopics: true})
	defer auto.Close()
	if err := auto.WriteMessages(ctx, kafka.Message{Topic: "made-up", Value: []byte("v")}); err != nil {
		t.Fatalf("AutoCreateTopics: %v", err)
	}
	if missing, err := admin.Missing(ctx, brokers, nil, "made-up"); err != nil || missing {
		t.Fatalf("AutoCreateTopics: Missing = %v, %v", missing, err)
	}
}

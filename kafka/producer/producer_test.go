package producer

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
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
	if w.Topic != "" || !w.AllowAutoTopicCreation || w.Async {
		t.Errorf("Topic %q, AllowAutoTopicCreation %v, Async %v", w.Topic, w.AllowAutoTopicCreation, w.Async)
	}
	if tr, ok := w.Transport.(*kafka.Transport); !ok || tr.MetadataTTL != time.Second {
		t.Errorf("Transport = %+v, want one whose leaders are 1 s old at most", w.Transport)
	}
	if w.Addr.String() != "127.0.0.1:9092" || w.BatchSize != 1000 {
		t.Errorf("Addr %v, BatchSize %d", w.Addr, w.BatchSize)
	}
	w2 := New(Config{Brokers: []string{"a:1", "b:2"}, BatchSize: 10, BatchTimeout: time.Second, Async: true})
	defer w2.Close()
	if w2.BatchSize != 10 || w2.BatchTimeout != time.Second || !w2.Async || w2.Addr.String() != "a:1,b:2" {
		t.Errorf("configured writer: %+v", w2)
	}
}

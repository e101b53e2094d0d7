package producer

import (
	"context"
	"strconv"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// fakeBrokers returns a kfake cluster holding topic with 8 partitions.
func fakeBrokers(tb testing.TB, topic string) []string {
	tb.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(8, topic))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c.ListenAddrs()
}

func messages(topic string, n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte("v")}
	}
	return msgs
}

// TestSplit: small calls and large ones both arrive, each through the
// writer of its size, and the small writer's batches are small.
func TestSplit(t *testing.T) {
	brokers := fakeBrokers(t, "orders")
	s := NewSplit(Config{Brokers: brokers, BatchSize: 1000}, 16)
	defer s.Close()
	if s.small.BatchSize != 16 || s.large.BatchSize != 1000 || s.small.Transport != s.large.Transport {
		t.Fatalf("small batch %d, large batch %d, shared transport %v", s.small.BatchSize, s.large.BatchSize, s.small.Transport == s.large.Transport)
	}
	ctx := context.Background()
	if err := s.WriteMessages(ctx, messages("orders", 16)...); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteMessages(ctx, messages("orders", 500)...); err != nil {
		t.Fatal(err)
	}
	if small, large := s.small.Stats().Messages, s.large.Stats().Messages; small != 16 || large != 500 {
		t.Errorf("messages written: %d small, %d large; want 16 and 500", small, large)
	}
	if n := NewSplit(Config{BatchSize: 10}, 0); n.limit != 10 {
		t.Errorf("a small limit over the batch size: %d, want it capped at 10", n.limit)
	}
}

// BenchmarkSmallWrites: 10 messages a call over 8 partitions, the
// scanner's steady load, through one writer of batch size 1000 and
// through a Split: the bytes allocated per call are the difference.
func BenchmarkSmallWrites(b *testing.B) {
	brokers := fakeBrokers(b, "orders")
	msgs := messages("orders", 10)
	ctx := context.Background()
	type writer interface {
		WriteMessages(context.Context, ...kafka.Message) error
		Close() error
	}
	for _, bc := range []struct {
		name string
		w    func() writer
	}{
		{"one-writer", func() writer { return New(Config{Brokers: brokers, BatchSize: 1000}) }},
		{"split", func() writer { return NewSplit(Config{Brokers: brokers, BatchSize: 1000}, 0) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := bc.w()
			defer w.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := w.WriteMessages(ctx, msgs...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

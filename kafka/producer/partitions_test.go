package producer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/kafka/kafkaauth"
)

// countingTrip answers metadata requests for topic "known" with 3
// partitions and "unknown" with UnknownTopicOrPartition, and counts calls.
type countingTrip struct{ calls int }

func (c *countingTrip) RoundTrip(_ context.Context, _ net.Addr, req kafka.Request) (kafka.Response, error) {
	c.calls++
	m, ok := req.(*metadataAPI.Request)
	if !ok {
		return nil, errors.New("not metadata")
	}
	res := &metadataAPI.Response{}
	for _, name := range m.TopicNames {
		t := metadataAPI.ResponseTopic{Name: name}
		if name == "known" {
			t.Partitions = make([]metadataAPI.ResponsePartition, 3)
		} else {
			t.ErrorCode = int16(kafka.UnknownTopicOrPartition)
		}
		res.Topics = append(res.Topics, t)
	}
	return res, nil
}

func TestPartitionCache(t *testing.T) {
	ctx := context.Background()
	next := &countingTrip{}
	c := newPartitionCache(next, time.Hour)
	addr := kafka.TCP("b:1")
	ask := func(topic string) *metadataAPI.Response {
		t.Helper()
		r, err := c.RoundTrip(ctx, addr, &metadataAPI.Request{TopicNames: []string{topic}})
		if err != nil {
			t.Fatal(err)
		}
		return r.(*metadataAPI.Response)
	}
	for range 3 {
		if r := ask("known"); len(r.Topics[0].Partitions) != 3 {
			t.Fatalf("known: %+v", r)
		}
	}
	if next.calls != 1 {
		t.Errorf("3 lookups of a known topic made %d calls, want 1", next.calls)
	}
	for range 2 {
		if r := ask("unknown"); r.Topics[0].ErrorCode == 0 {
			t.Fatalf("unknown: %+v", r)
		}
	}
	if next.calls != 3 {
		t.Errorf("an unknown topic is cached: %d calls, want 3", next.calls)
	}
	if _, err := c.RoundTrip(ctx, addr, &metadataAPI.Request{TopicNames: []string{"known", "unknown"}}); err != nil || next.calls != 4 {
		t.Errorf("a two-topic request: %v, %d calls, want it passed through", err, next.calls)
	}
	if _, err := c.RoundTrip(ctx, addr, &metadataAPI.Request{}); err != nil || next.calls != 5 {
		t.Errorf("an all-topics request: %v, %d calls, want it passed through", err, next.calls)
	}

	expiring := newPartitionCache(next, time.Nanosecond)
	before := next.calls
	for range 2 {
		if _, err := expiring.RoundTrip(ctx, addr, &metadataAPI.Request{TopicNames: []string{"known"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if next.calls-before != 2 {
		t.Errorf("an expired answer was reused: %d calls, want 2", next.calls-before)
	}
}

// BenchmarkPartitions is the lookup kafka-go's Writer makes per message,
// against a cluster of 64 topics: through the transport's own cache
// (what the writer did before) and through partitionCache.
func BenchmarkPartitions(b *testing.B) {
	var topics []string
	for i := range 64 {
		topics = append(topics, fmt.Sprintf("topic-%02d", i))
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(8, topics...))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tr := &kafka.Transport{MetadataTTL: kafkaauth.MetadataTTL}
	defer tr.CloseIdleConnections()
	addr := kafka.TCP(c.ListenAddrs()...)
	for name, rt := range map[string]kafka.RoundTripper{"transport": tr, "cache": newPartitionCache(tr, kafkaauth.MetadataTTL)} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r, err := rt.RoundTrip(ctx, addr, &metadataAPI.Request{TopicNames: []string{"topic-42"}})
				if err != nil || len(r.(*metadataAPI.Response).Topics[0].Partitions) != 8 {
					b.Fatal(r, err)
				}
			}
		})
	}
}

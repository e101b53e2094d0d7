package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/failed"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

func TestKafkaFailedTopicAndCancel(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topics.Failed, topics.Input))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	w := producer.New(producer.Config{Brokers: brokers})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var msgs []kafka.Message
	for i, reason := range []string{"delay-topic: missing", "delay-after: \"x\" is not a duration", "delay-topic: missing"} {
		msgs = append(msgs, kafka.Message{
			Topic: topics.Failed, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Time: time.UnixMilli(1_800_000_000_000 + int64(i)*1000),
			Headers: []kafka.Header{
				{Key: "trace", Value: []byte("abc")},
				{Key: payload.HeaderTopic, Value: []byte("orders")},
				{Key: payload.HeaderError, Value: []byte(reason)},
				{Key: failed.HeaderSourceTopic, Value: []byte(topics.Input)},
				{Key: failed.HeaderSourcePartition, Value: []byte("1")},
				{Key: failed.HeaderSourceOffset, Value: []byte(fmt.Sprint(40 + i))},
			},
		})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}

	f := NewFailedTopic(brokers, nil, w)
	all, err := f.Browse(ctx, FailedQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || string(all[0].Key) != "k2" || all[0].Source != "delay-input/1/42" || all[0].Reason != "delay-topic: missing" {
		t.Fatalf("Browse all = %+v", all)
	}
	some, err := f.Browse(ctx, FailedQuery{Reason: "duration", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(some) != 1 || string(some[0].Value) != "v1" {
		t.Fatalf("Browse reason = %+v", some)
	}
	newest, err := f.Browse(ctx, FailedQuery{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(newest) != 2 || string(newest[1].Key) != "k1" {
		t.Fatalf("Browse limit 2 = %+v", newest)
	}

	var he httpError
	if _, err := f.Replay(ctx, []FailedRef{{Partition: some[0].Partition, Offset: 9999}}); !errors.As(err, &he) || he.status != 404 {
		t.Fatalf("Replay of no message = %v, want a 404 (the caller's mistake, answered as it is)", err)
	}
	n, err := f.Replay(ctx, []FailedRef{some[0].FailedRef})
	if err != nil || n != 1 {
		t.Fatalf("Replay = %d, %v", n, err)
	}
	if err := NewCanceller(w).Cancel(ctx, "task-9", 1_893_596_645_000); err != nil {
		t.Fatal(err)
	}
	if err := NewCanceller(w).Cancel(ctx, "task-10", 0); err != nil {
		t.Fatal(err)
	}

	got := readTopic(ctx, t, brokers, topics.Input, 3)
	var replayed, cancelled, byID *kafka.Message
	for i := range got {
		switch string(got[i].Key) {
		case "k1":
			replayed = &got[i]
		case "task-10":
			byID = &got[i]
		default:
			cancelled = &got[i]
		}
	}
	if replayed == nil || string(replayed.Value) != "v1" {
		t.Fatalf("replayed = %+v", replayed)
	}
	h := hdrs(*replayed)
	for _, want := range []string{"trace=abc", "delay-topic=orders", "delay-replay-of=" + topics.Failed + "/" + fmt.Sprint(some[0].Partition) + "/" + fmt.Sprint(some[0].Offset), "delay-replay-source=delay-input/1/41"} {
		if !strings.Contains(h, want) {
			t.Errorf("replayed headers %q lack %q", h, want)
		}
	}
	if strings.Contains(h, "delay-error") || strings.Contains(h, "delay-source-") {
		t.Errorf("replayed headers %q keep the failure headers", h)
	}
	if cancelled == nil || hdrs(*cancelled) != "delay-op=cancel delay-id=task-9 delay-at=1893596645000" {
		t.Errorf("cancel = %+v", cancelled)
	}
	if byID == nil || hdrs(*byID) != "delay-op=cancel delay-id=task-10" {
		t.Errorf("cancel by id alone = %+v", byID)
	}
}

func hdrs(m kafka.Message) string {
	var s []string
	for _, h := range m.Headers {
		s = append(s, h.Key+"="+string(h.Value))
	}
	return strings.Join(s, " ")
}

// readTopic reads n messages from every partition of topic.
func readTopic(ctx context.Context, t *testing.T, brokers []string, topic string, n int) []kafka.Message {
	t.Helper()
	var out []kafka.Message
	for p := range 2 {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p, MaxWait: 50 * time.Millisecond})
		for len(out) < n {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			m, err := r.ReadMessage(rctx)
			cancel()
			if err != nil {
				break
			}
			out = append(out, m)
		}
		r.Close()
	}
	if len(out) != n {
		t.Fatalf("read %d messages from %s, want %d", len(out), topic, n)
	}
	return out
}

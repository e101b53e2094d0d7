package consumer

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
)

// The foundation's Kafka check on the real broker: create a topic, produce
// with RequireAll, read back through a consumer group with committed
// offsets, and a second reader of the group resumes after the commit.
func TestRealKafkaProduceGroupCommitResume(t *testing.T) {
	brokers := stacktest.Kafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 10)
	topic, group := "dqtest-kafka-"+suffix, "dqtest-group-"+suffix

	specs := []admin.Spec{{Name: topic, Partitions: 2, ReplicationFactor: 1}}
	for i := range 2 { // idempotent
		if err := admin.Ensure(ctx, brokers, nil, specs); err != nil {
			t.Fatalf("admin.Ensure call %d: %v", i+1, err)
		}
	}

	w := producer.New(producer.Config{Brokers: brokers})
	defer w.Close()
	const n = 20
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Topic: topic, Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i)),
			Headers: []kafka.Header{{Key: "delay-id", Value: []byte(strconv.Itoa(i))}}}
	}
	if err := w.WriteMessages(ctx, msgs[:n-5]...); err != nil {
		t.Fatal(err)
	}
	// A small synchronous write must not wait out kafka-go's 1 s default
	// batch timeout; same key, same partition.
	for _, m := range msgs[n-5:] {
		m.Key = []byte("same")
		start := time.Now()
		if err := w.WriteMessages(ctx, m); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("a one-message write took %v", d)
		}
	}

	read := func(r *kafka.Reader, count int) []kafka.Message {
		t.Helper()
		var out []kafka.Message
		for len(out) < count {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("fetch after %d of %d: %v", len(out), count, err)
			}
			out = append(out, m)
		}
		return out
	}
	value := func(ms []kafka.Message) map[string]bool {
		out := map[string]bool{}
		for _, m := range ms {
			out[string(m.Value)] = true
		}
		return out
	}

	// First reader: 12 messages, commit them through a Window in a
	// scrambled finishing order, close.
	r1, err := NewReader(ReaderConfig{Brokers: brokers, GroupID: group, Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	first := read(r1, 12)
	windows := map[int]*Window{}
	for _, m := range first {
		if windows[m.Partition] == nil {
			windows[m.Partition] = NewWindow()
		}
		windows[m.Partition].Start(m.Offset)
	}
	var commits []kafka.Message
	for _, i := range []int{5, 0, 11, 3, 1, 2, 4, 10, 6, 9, 8, 7} {
		m := first[i]
		if c, ok := windows[m.Partition].Done(m.Offset); ok {
			commits = append(commits, kafka.Message{Topic: topic, Partition: m.Partition, Offset: c - 1})
		}
	}
	if err := r1.CommitMessages(ctx, commits...); err != nil {
		t.Fatal(err)
	}
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}

	// Second reader of the same group: exactly the other 8 messages.
	r2, err := NewReader(ReaderConfig{Brokers: brokers, GroupID: group, Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	second := read(r2, n-12)
	got := value(second)
	want := value(msgs)
	for v := range value(first) {
		delete(want, v)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("second reader got %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	// Nothing else is left for the group.
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if m, err := r2.FetchMessage(short); err == nil {
		t.Fatalf("second reader got an extra message %s at %d/%d", m.Value, m.Partition, m.Offset)
	}

	// Headers pass through, and one key stays on one partition.
	all := append(first, second...)
	part := -1
	for _, m := range all {
		if len(m.Headers) != 1 || m.Headers[0].Key != "delay-id" {
			t.Fatalf("headers of %s: %v", m.Value, m.Headers)
		}
		if string(m.Key) != "same" {
			continue
		}
		if part >= 0 && m.Partition != part {
			t.Fatalf("key %q on partitions %d and %d", m.Key, part, m.Partition)
		}
		part = m.Partition
	}
	t.Logf("%d messages, first reader saw %d partitions", len(all), len(windows))
}

package committed_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/committed"
	"github.com/delayq/delayq/kafka/committed/txntest"
)

// TestReadCommitted reads a partition a transactional producer wrote
// (txntest.Write) on kfake and on the local Kafka: every plain and
// committed record once, in offset order, no record of an aborted
// transaction, no transaction marker; what follows the open transaction
// comes once the broker aborted it by its timeout.
func TestReadCommitted(t *testing.T) {
	for _, backend := range []string{"kfake", "kafka"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			var brokers []string
			topic := fmt.Sprintf("dqtest-committed-%d", time.Now().UnixNano())
			if backend == "kfake" {
				c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				brokers = c.ListenAddrs()
			} else {
				if testing.Short() {
					t.Skip("short")
				}
				brokers = stacktest.Kafka(t)
				if err := admin.Ensure(ctx, brokers, nil, []admin.Spec{{Name: topic, Partitions: 2, ReplicationFactor: 1}}); err != nil {
					t.Fatal(err)
				}
			}
			w := txntest.Write(t, ctx, brokers, topic, 1, topic+"-", func(name string) *kgo.Record {
				return &kgo.Record{Key: []byte(name), Value: []byte(name), Headers: []kgo.RecordHeader{{Key: "name", Value: []byte(name)}}}
			})
			start := time.Now()
			r, err := committed.NewReader(committed.Config{Brokers: brokers, Topic: topic, Partition: 1, Offset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got []string
			var last int64 = -1
			for len(got) < len(w.Visible) {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					t.Fatalf("after %q: %v", got, err)
				}
				if m.Offset <= last || m.Partition != 1 || m.Topic != topic || len(m.Headers) != 1 || string(m.Headers[0].Value) != string(m.Value) {
					t.Fatalf("message %+v after offset %d", m, last)
				}
				last = m.Offset
				got = append(got, string(m.Value))
			}
			if !slices.Equal(got, w.Visible) {
				t.Fatalf("read %q, want %q", got, w.Visible)
			}
			if waited := time.Since(start); waited < txntest.OpenTimeout/2 {
				t.Errorf("read what follows the open transaction after %v: the broker cannot have aborted it yet", waited)
			}
			// Nothing more: no marker, nothing of B or C.
			short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancelShort()
			if m, err := r.FetchMessage(short); err == nil {
				t.Errorf("then read %q at %d, want nothing (hidden: %q)", m.Value, m.Offset, w.Hidden)
			}
			t.Logf("%s: read %d records, the last %v after the open transaction began", backend, len(got), time.Since(start).Round(time.Millisecond))
		})
	}
}

func TestNewReaderNeedsTopic(t *testing.T) {
	if _, err := committed.NewReader(committed.Config{}); err == nil {
		t.Fatal("NewReader without a topic: nil error")
	}
	r, _ := committed.NewReader(committed.Config{Topic: "t"})
	r.Close()
	r.Close()
	if _, err := r.FetchMessage(context.Background()); err != committed.ErrClosed {
		t.Errorf("FetchMessage after Close = %v, want ErrClosed", err)
	}
}

package committed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/committed"
	"github.com/delayq/delayq/kafka/producer"
)

// BenchmarkRead reads n messages of 100 bytes from one partition of the
// local Kafka, with a committed.Reader (ingest's) and with kafka-go's
// Reader (what ingest used before), from the start each time.
//
//	go test -run - -bench BenchmarkRead -benchtime 5x ./kafka/committed
func BenchmarkRead(b *testing.B) {
	const n = 100_000
	brokers := stacktest.Kafka(b)
	ctx := context.Background()
	topic := fmt.Sprintf("dqbench-committed-%d", time.Now().UnixNano())
	if err := admin.Ensure(ctx, brokers, nil, []admin.Spec{{Name: topic, Partitions: 1, ReplicationFactor: 1}}); err != nil {
		b.Fatal(err)
	}
	w := producer.New(producer.Config{Brokers: brokers})
	msgs := make([]kafka.Message, 1000)
	for i := range msgs {
		msgs[i] = kafka.Message{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: make([]byte, 100),
			Headers: []kafka.Header{{Key: "delay-topic", Value: []byte("orders")}, {Key: "delay-after", Value: []byte("1m")}}}
	}
	for range n / len(msgs) {
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()

	readers := map[string]func() (interface {
		FetchMessage(context.Context) (kafka.Message, error)
		Close() error
	}, error){
		"committed": func() (interface {
			FetchMessage(context.Context) (kafka.Message, error)
			Close() error
		}, error) {
			return committed.NewReader(committed.Config{Brokers: brokers, Topic: topic, Offset: kafka.FirstOffset, MaxBytes: 16 << 20})
		},
		"kafka-go": func() (interface {
			FetchMessage(context.Context) (kafka.Message, error)
			Close() error
		}, error) {
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 500 * time.Millisecond, QueueCapacity: 1000})
			return r, r.SetOffset(kafka.FirstOffset)
		},
	}
	for _, name := range []string{"committed", "kafka-go"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := readers[name]()
				if err != nil {
					b.Fatal(err)
				}
				for range n {
					if _, err := r.FetchMessage(ctx); err != nil {
						b.Fatal(err)
					}
				}
				r.Close()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

package ingest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

type nopStore struct{}

func (nopStore) Put(context.Context, []payload.Task) error { return nil }

func (nopStore) Get(_ context.Context, refs []payload.Ref) ([]*payload.Task, error) {
	return make([]*payload.Task, len(refs)), nil
}

func (nopStore) PutIDs(context.Context, []payload.IDWrite) error { return nil }

func (nopStore) GetIDs(_ context.Context, ids []uint64) ([]payload.IDState, error) {
	return make([]payload.IDState, len(ids)), nil
}

type nopIndex struct{}

func (nopIndex) Add(context.Context, time.Time, []zset.Entry) error { return nil }

func (nopIndex) Forget(context.Context, time.Time, []zset.Entry) (int64, error) { return 0, nil }

func (nopIndex) FlagOps(context.Context, []uint64, time.Duration) error { return nil }

func (nopIndex) Flagged(_ context.Context, ids []uint64) ([]bool, error) {
	return make([]bool, len(ids)), nil
}

type nopWriter struct{}

func (nopWriter) WriteMessages(context.Context, ...kafka.Message) error { return nil }

// BenchmarkHandle is ingest's own work on a fetched batch: decoding every
// message, building the store's tasks and the index entries, with stores
// that do nothing (their cost is the load tool's to measure).
func BenchmarkHandle(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		msgs := make([]payload.Message, n)
		for i := range msgs {
			msgs[i] = msg(i%8, int64(i), payload.HeaderTopic, "biz",
				payload.HeaderAt, strconv.FormatInt(testNow.Add(time.Minute).UnixMilli()+int64(i), 10),
				payload.HeaderID, strconv.FormatInt(1795251948605879672+int64(i), 10), "trace", "t1")
			msgs[i].Value = make([]byte, 100)
		}
		in, err := New(Config{Brokers: []string{"b"}}, nopStore{}, nopIndex{}, nopWriter{})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.Run("batch="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := in.handle(ctx, msgs, testNow); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

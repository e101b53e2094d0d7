package ingest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// panicStore is the in-memory store with a bug: Put panics for any call
// that holds a task named boom.
type panicStore struct {
	*payload.Memory
	boom string
}

func (s panicStore) Put(ctx context.Context, tasks []payload.Task) error {
	for _, t := range tasks {
		if t.Name == s.boom {
			panic("bug: " + t.Name)
		}
	}
	return s.Memory.Put(ctx, tasks)
}

// TestPanicGoesToFailed: a message whose handling panics (the store's Put,
// here) goes to the failed topic with reason "internal error"; the other
// messages of its batch are stored, the ingester keeps running and stores
// what comes after.
func TestPanicGoesToFailed(t *testing.T) {
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	input, slow, failed := "in-"+suffix, "slow-"+suffix, "failed-"+suffix
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, input, slow, failed))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ix, err := zset.New(rdb, zset.Config{Prefix: "t-" + suffix})
	if err != nil {
		t.Fatal(err)
	}
	w := producer.New(producer.Config{Brokers: brokers})
	t.Cleanup(func() { w.Close() })
	mem := payload.NewMemory()
	in, err := New(Config{Brokers: brokers, GroupID: "g-" + suffix, Input: input, Slow: slow, Failed: failed,
		Registerer: prometheus.NewRegistry()}, panicStore{Memory: mem, boom: "boom"}, roles(ix), w)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	submit := func(names ...string) {
		msgs := make([]kafka.Message, len(names))
		for i, name := range names {
			msgs[i] = kafka.Message{Topic: input, Value: []byte(name), Time: time.Now(), Headers: []kafka.Header{
				{Key: payload.HeaderTopic, Value: []byte("orders")}, {Key: payload.HeaderID, Value: []byte(name)},
				{Key: payload.HeaderAfter, Value: []byte("1h")}}}
		}
		produce(t, ctx, w, msgs)
	}
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprint("t", i))
	}
	submit(append(names[:10:10], append([]string{"boom"}, names[10:]...)...)...)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(runCtx) }()
	waitStored := func(n int) {
		for mem.Len() < n {
			select {
			case err := <-done:
				t.Fatalf("Run returned %v with %d of %d tasks stored", err, mem.Len(), n)
			case <-ctx.Done():
				t.Fatalf("%d of %d tasks stored", mem.Len(), n)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitStored(20)
	submit("after-1", "after-2") // the role is still up
	waitStored(22)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	got := readTopic(t, ctx, client, brokers, failed)
	if len(got) != 1 {
		t.Fatalf("%d messages in the failed topic, want 1 (boom)", len(got))
	}
	reason, _ := header(got[0], payload.HeaderError)
	off, _ := header(got[0], HeaderSourceOffset)
	if string(got[0].Value) != "boom" || reason != ReasonInternal || off != "10" {
		t.Errorf("failed message %q, delay-error %q, offset %s; want boom, %q, 10", got[0].Value, reason, off, ReasonInternal)
	}
	if v := counterValue(in.m.failed.WithLabelValues(reasonPanic)); v != 1 {
		t.Errorf("failed_total{reason=%q} = %v, want 1", reasonPanic, v)
	}
}

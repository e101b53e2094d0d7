package dispatcher

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/dispatcher/redlock"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/zset"
)

// realRedis returns a client of the local stack's Redis and a prefix unique
// to the test; keys under it are deleted at cleanup.
func realRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	return stacktest.RedisPrefix(t, "dqtest-dispatch")
}

func TestRealStackDispatcherEmitsDueZsetsOnly(t *testing.T) {
	c, prefix := realRedis(t)
	brokers := stacktest.Kafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()

	topic := prefix + "-scan"
	if err := admin.Ensure(ctx, brokers, nil, []admin.Spec{{Name: topic, Partitions: 1, ReplicationFactor: 1}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
		cl.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	})

	ix, err := zset.New(c, zset.Config{Prefix: prefix, Shards: 8})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	want := map[string]bool{}
	var entries []zset.Entry
	for i := range 5 { // overdue: they land in the segment of now
		e := zset.Entry{ID: uint64(1000 + i*7919), ExecAt: now.Add(-time.Duration(i+1) * time.Minute).UnixMilli()}
		entries = append(entries, e)
		want[ix.Key(zset.Entry{ID: e.ID, ExecAt: now.UnixMilli()})] = true
	}
	for i := range 5 { // not due for an hour or more
		entries = append(entries, zset.Entry{ID: uint64(2000 + i), ExecAt: now.Add(time.Duration(i+1) * time.Hour).UnixMilli()})
	}
	if err := ix.Writer().Add(ctx, now, entries); err != nil {
		t.Fatal(err)
	}

	w := producer.New(producer.Config{Brokers: brokers})
	defer w.Close()
	d, err := New(Config{Tick: time.Second, LockPrefix: prefix, ScanTopic: topic}, roles(ix), redlock.New(c), w)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	// Read the first tick's batch: it ends where a message of the next tick
	// (the same zsets again, since nothing drains them) begins.
	got := map[string]bool{}
	var first int64
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read scan topic: %v (so far %v)", err, got)
		}
		s, err := scantask.Parse(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != s.Zset {
			t.Fatalf("key %q, zset %q", m.Key, s.Zset)
		}
		if first == 0 {
			first = s.Until
			// until = tick + lookahead (one tick): a whole second at most
			// one tick ahead.
			if first%1000 != 0 || first > time.Now().Add(time.Second).UnixMilli() {
				t.Fatalf("until %d is not a whole second at most one tick ahead", first)
			}
		}
		if s.Until != first {
			if s.Until <= first {
				t.Fatalf("a later tick has until %d <= %d", s.Until, first)
			}
			break
		}
		if got[s.Zset] {
			t.Fatalf("zset %s twice in one tick", s.Zset)
		}
		got[s.Zset] = true
	}
	if !maps.Equal(got, want) {
		t.Fatalf("one tick emitted %v, want exactly the due zsets %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

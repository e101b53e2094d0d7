package ingest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/zset"
)

// realStack is one test's share of the local stack: its own topics, consumer
// group, HBase table and Redis prefix, removed (but for the topics and the
// group) when the test ends.
type realStack struct {
	brokers             []string
	input, slow, failed string
	group               string
	prefix              string // of the Redis keys of ix
	redisAddr           string
	store               *hbase.Store
	ix                  *zset.Index
	w                   Writer
}

func newRealStack(t *testing.T, ctx context.Context) *realStack {
	t.Helper()
	brokers := stacktest.Kafka(t)
	raddr := stacktest.Redis(t)
	zk := stacktest.HBase(t)

	nanos := time.Now().UnixNano()
	suffix := strconv.FormatInt(nanos, 10)
	s := &realStack{
		brokers:   brokers,
		input:     "dqtest-ingest-in-" + suffix,
		slow:      "dqtest-ingest-slow-" + suffix,
		failed:    "dqtest-ingest-failed-" + suffix,
		group:     "dqtest-ingest-" + suffix,
		redisAddr: raddr,
	}
	err := admin.Ensure(ctx, brokers, nil, []admin.Spec{
		{Name: s.input, Partitions: 3, ReplicationFactor: 1},
		{Name: s.slow, Partitions: 2, ReplicationFactor: 1},
		{Name: s.failed, Partitions: 2, ReplicationFactor: 1},
	})
	if err != nil {
		t.Fatal(err)
	}

	const salts = 4
	table := fmt.Sprintf("delayq_test_ingest_%d", nanos)
	if err := hbase.CreateTable(ctx, zk, "", table, salts); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() { stacktest.DropTable(t, zk, table) })
	s.store, err = hbase.New(hbase.Config{ZK: zk, Table: table, Salts: salts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.store.Close)

	rdb := redis.NewClient(&redis.Options{Addr: raddr})
	prefix := "dqtest-ingest-" + suffix
	s.prefix = prefix
	t.Cleanup(func() { stacktest.DropKeys(t, rdb, prefix); rdb.Close() })
	s.ix, err = zset.New(rdb, zset.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}

	w := producer.New(producer.Config{Brokers: brokers})
	t.Cleanup(func() { w.Close() })
	s.w = w
	return s
}

// TestRunRealStack runs the ingester on the local stack: real Kafka (topics
// and a consumer group of its own), the HBase store on a fresh pre-split
// table and the zset index under a fresh Redis prefix.
func TestRunRealStack(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	rs := newRealStack(t, ctx)
	s := &scenario{
		brokers: rs.brokers,
		store:   rs.store,
		ix:      rs.ix,
		w:       rs.w,
		input:   rs.input,
		slow:    rs.slow,
		failed:  rs.failed,
		group:   rs.group,
		n:       400,
		timeout: 45 * time.Second,
		logf:    t.Logf,
		tb:      t,
		ctx:     ctx,
	}
	s.run()
}

// TestRunRealStackGracefulStop stops the ingester in the middle of a stream
// and checks that it committed exactly what it stored (so a restart
// duplicates nothing), then that a new ingester of the group finishes the
// stream.
func TestRunRealStackGracefulStop(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	rs := newRealStack(t, ctx)
	client := &kafka.Client{Addr: kafka.TCP(rs.brokers...), Timeout: 5 * time.Second}
	cfg := Config{Brokers: rs.brokers, GroupID: rs.group, Input: rs.input, Slow: rs.slow, Failed: rs.failed, BatchSize: 50}

	start := func() (*Ingester, func() error) {
		in, err := New(cfg, rs.store, roles(rs.ix), rs.w)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- in.Run(runCtx) }()
		return in, func() error { stop(); return <-done }
	}

	// Produce only once the group is stable, so that no rebalance (which can
	// make a commit fail) happens while the stream flows.
	in, stop := start()
	waitStable(t, ctx, client, rs.group, 1)

	const n = 5000
	t0 := time.Now().Add(10 * time.Minute).Truncate(time.Millisecond)
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{
			Topic: rs.input,
			Key:   []byte(strconv.Itoa(i)),
			Value: []byte("v"),
			Headers: []kafka.Header{
				{Key: payload.HeaderTopic, Value: []byte("biz")},
				{Key: payload.HeaderID, Value: []byte("graceful-" + strconv.Itoa(i))},
				{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(t0.UnixMilli()+int64(i), 10))},
			},
		}
	}
	producer := &kafka.Writer{Addr: kafka.TCP(rs.brokers...), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond}
	defer producer.Close()
	produce(t, ctx, producer, msgs)

	for {
		lag, err := groupLag(ctx, client, rs.group, rs.input)
		if err == nil && lag < n {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("nothing committed: lag %d, %v", lag, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	lag, err := groupLag(ctx, client, rs.group, rs.input)
	if err != nil {
		t.Fatal(err)
	}
	rows := countRows(t, ctx, rs.store, t0.UnixMilli(), n)
	t.Logf("stopped with %d of %d committed, %d rows stored", n-lag, n, rows)
	if commitErrs := counterValue(in.m.commitErrors); commitErrs != 0 {
		t.Errorf("%v commit errors", commitErrs)
	}
	if int64(rows) != n-lag {
		t.Errorf("graceful stop: %d rows stored but %d messages committed", rows, n-lag)
	}

	_, stop = start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lag, err := groupLag(ctx, client, rs.group, rs.input)
		if err == nil && lag == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart: lag %d, %v", lag, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run after restart: %v", err)
	}
	if rows := countRows(t, ctx, rs.store, t0.UnixMilli(), n); rows != n {
		t.Errorf("after restart: %d rows, want %d", rows, n)
	}
}

// waitStable waits until group is Stable with members members, each with
// partitions assigned. An ingester is one member (both topics).
func waitStable(t *testing.T, ctx context.Context, client *kafka.Client, group string, members int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		if err == nil && len(res.Groups) == 1 {
			g := res.Groups[0]
			assigned := 0
			for _, m := range g.Members {
				if len(m.MemberAssignments.Topics) > 0 {
					assigned++
				}
			}
			if g.GroupState == "Stable" && len(g.Members) == members && assigned == members {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s not stable with %d members: %+v, %v", group, members, res, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func countRows(t *testing.T, ctx context.Context, store payload.Store, from int64, n int) int {
	t.Helper()
	rows := 0
	if err := store.Scan(ctx, from, from+int64(n), func(payload.Task) error { rows++; return nil }); err != nil {
		t.Fatal(err)
	}
	return rows
}

package scanner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/zset"
)

const (
	itSalts      = 4
	itShards     = 8
	itPartitions = 3
)

// stack is one integration test's slice of the real stack: its own topics,
// group, Redis prefix and HBase table.
type stack struct {
	t                                *testing.T
	sfx                              int64
	brokers                          []string
	scanTopic, bizTopic, failedTopic string
	group                            string
	zk, redis, table, prefix         string
	store                            *hbase.Store
	ix                               *zset.Index
	w                                *kafka.Writer
	keys                             []string
	until                            int64
}

func newStack(ctx context.Context, t *testing.T) *stack {
	t.Helper()
	brokers := stacktest.Kafka(t)
	redisAddr := stacktest.Redis(t)
	zk := stacktest.HBase(t)
	sfx := time.Now().UnixNano()
	st := &stack{
		t: t, sfx: sfx, brokers: brokers,
		scanTopic:   fmt.Sprintf("scantest-scan-%d", sfx),
		bizTopic:    fmt.Sprintf("scantest-biz-%d", sfx),
		failedTopic: fmt.Sprintf("scantest-failed-%d", sfx),
		group:       fmt.Sprintf("scantest-%d", sfx),
	}
	prefix := fmt.Sprintf("scantest:%d", sfx)
	table := fmt.Sprintf("scantest_%d", sfx)
	st.zk, st.redis, st.table, st.prefix = zk, redisAddr, table, prefix

	if err := admin.Ensure(ctx, brokers, nil, []admin.Spec{
		{Name: st.scanTopic, Partitions: itPartitions, ReplicationFactor: 1},
		{Name: st.bizTopic, Partitions: 1, ReplicationFactor: 1},
		{Name: st.failedTopic, Partitions: 1, ReplicationFactor: 1},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteTopics(brokers, st.scanTopic, st.bizTopic, st.failedTopic) })

	if err := hbase.CreateTable(ctx, zk, "", table, itSalts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stacktest.DropTable(t, zk, table) })
	store, err := hbase.New(hbase.Config{ZK: zk, Table: table, Salts: itSalts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	st.store = store

	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { stacktest.DropKeys(t, rdb, prefix); rdb.Close() })
	if st.ix, err = zset.New(rdb, zset.Config{Prefix: prefix, Shards: itShards}); err != nil {
		t.Fatal(err)
	}
	st.w = producer.New(producer.Config{Brokers: brokers})
	t.Cleanup(func() { st.w.Close() })
	return st
}

func (st *stack) name(i int) string { return fmt.Sprintf("it-%d-%d", st.sfx, i) }

// seed stores n tasks for bizTopic due a little in the past (the first
// cancelled of them cancelled), plus extra tasks and index entries without a
// row, and produces every due zset's scan task twice, as two dispatchers
// would.
func (st *stack) seed(ctx context.Context, n, cancelled int, extra []payload.Task, rowless ...zset.Entry) {
	st.t.Helper()
	now := time.Now()
	var (
		rows    []payload.Task
		entries = rowless
	)
	for i := range n {
		tk := task(st.name(i), st.bizTopic, now.Add(-time.Second).UnixMilli()+int64(i%50))
		rows = append(rows, tk)
		entries = append(entries, zset.Entry{ID: tk.ID, ExecAt: tk.ExecAt})
		if i < cancelled {
			rows = append(rows, payload.Task{ID: tk.ID, Name: tk.Name, ExecAt: tk.ExecAt, Cancel: true})
		}
	}
	for _, tk := range extra {
		rows = append(rows, tk)
		entries = append(entries, zset.Entry{ID: tk.ID, ExecAt: tk.ExecAt})
	}
	if err := st.store.Put(ctx, rows); err != nil {
		st.t.Fatal(err)
	}
	if err := st.ix.Writer().Add(ctx, now, entries); err != nil {
		st.t.Fatal(err)
	}
	st.until = now.UnixMilli()
	keys, err := st.ix.Reader().DueKeys(ctx, st.until)
	if err != nil || len(keys) == 0 {
		st.t.Fatalf("DueKeys = %v, %v", keys, err)
	}
	st.keys = keys
	var scans []kafka.Message
	for range 2 {
		for _, k := range keys {
			m := scantask.Task{Zset: k, Until: st.until}.Message()
			m.Topic = st.scanTopic
			scans = append(scans, m)
		}
	}
	if err := st.w.WriteMessages(ctx, scans...); err != nil {
		st.t.Fatal(err)
	}
}

func (st *stack) scanner(w Writer, cfg Config) *Scanner {
	st.t.Helper()
	cfg.Brokers, cfg.GroupID, cfg.Topic, cfg.FailedTopic = st.brokers, st.group, st.scanTopic, st.failedTopic
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := New(cfg, roles(st.ix), st.store, w)
	if err != nil {
		st.t.Fatal(err)
	}
	return s
}

// run runs s until the returned stop is called; stop waits for Run.
func run(t *testing.T, ctx context.Context, s *Scanner) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(25 * time.Second):
			t.Fatal("Run did not return after stop")
		}
	}
}

// checkDelivered checks that partition 0 of bizTopic holds exactly the tasks
// cancelled..n-1, once each, with their headers.
func (st *stack) checkDelivered(ctx context.Context, n, cancelled int) {
	st.t.Helper()
	got := consume(ctx, st.t, st.brokers, st.bizTopic, n-cancelled)
	// Whatever arrives in the next second is a duplicate.
	got = append(got, consumeFor(st.t, st.brokers, st.bizTopic, int64(len(got)), time.Second)...)
	seen := map[string]int{}
	for _, m := range got {
		id, _ := header(m, payload.HeaderID)
		seen[id]++
		if seen[id] > 1 {
			st.t.Errorf("task %s delivered %d times", id, seen[id])
		}
		if at, ok := header(m, payload.HeaderAt); !ok || at == "" {
			st.t.Errorf("task %s without delay-at", id)
		}
		if string(m.Value) != "v-"+id || string(m.Key) != "k-"+id {
			st.t.Errorf("task %s: key %q value %q", id, m.Key, m.Value)
		}
	}
	for i := range n {
		if got, want := seen[st.name(i)] > 0, i >= cancelled; got != want {
			st.t.Errorf("task %d: delivered %v, want %v", i, got, want)
		}
	}
}

func (st *stack) checkDrained(ctx context.Context) {
	st.t.Helper()
	for _, k := range st.keys {
		if rest, err := st.ix.Reader().Due(ctx, k, 1<<52, 10); err != nil || len(rest) != 0 {
			st.t.Errorf("zset %s after scan: %v, %v", k, rest, err)
		}
	}
}

// TestScannerOnRealStack runs the scanner against the local Kafka, Redis and
// HBase: every stored task is delivered exactly once although every scan task
// is produced twice, cancelled and missing tasks are dropped, a task for an
// invalid topic goes to the failed topic, the zsets end empty and the group's
// committed offsets reach the end of the scan topic.
func TestScannerOnRealStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	st := newStack(ctx, t)
	const n, cancelled = 300, 10
	bad := task(fmt.Sprintf("it-%d-bad", st.sfx), "scantest bad topic", time.Now().Add(-time.Second).UnixMilli())
	st.seed(ctx, n, cancelled, []payload.Task{bad}, zset.Entry{ID: 12345, ExecAt: bad.ExecAt})

	stop := run(t, ctx, st.scanner(st.w, Config{Workers: 4, BatchSize: 40, MaxAttempts: 2}))
	defer stop()

	st.checkDelivered(ctx, n, cancelled)
	failed := consume(ctx, t, st.brokers, st.failedTopic, 1)
	if reason, _ := header(failed[0], payload.HeaderError); reason == "" {
		t.Errorf("failed record without delay-error: %v", failed[0].Headers)
	}
	if id, _ := header(failed[0], payload.HeaderID); id != bad.Name {
		t.Errorf("failed record delay-id %q, want %q", id, bad.Name)
	}
	if topic, _ := header(failed[0], payload.HeaderTopic); topic != bad.Topic {
		t.Errorf("failed record delay-topic %q, want %q", topic, bad.Topic)
	}
	waitCommitted(ctx, t, st.brokers, st.group, st.scanTopic, itPartitions)
	st.checkDrained(ctx)
}

// slowWriter acknowledges every write late, like a slow broker: the messages
// are out at once, the call returns after delay, or with ctx.Err() when ctx
// ends first (as kafka-go's WriteMessages does while its batch is in flight).
type slowWriter struct {
	Writer
	delay  time.Duration
	writes atomic.Int64
}

func (w *slowWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	err := w.Writer.WriteMessages(context.WithoutCancel(ctx), msgs...)
	w.writes.Add(1)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(w.delay):
		return err
	}
}

// TestScannerStopAndRebalance stops a member while scans are in flight, with
// a drain deadline shorter than those scans, then runs two members so that the
// group rebalances while scans are in flight: no task may be delivered twice
// or lost.
func TestScannerStopAndRebalance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	st := newStack(ctx, t)
	const n = 400
	st.seed(ctx, n, 0, nil)

	// 200 writes of 2 tasks, 150ms each, at most 6 in parallel.
	w := &slowWriter{Writer: st.w, delay: 150 * time.Millisecond}
	cfg := Config{Workers: 2, BatchSize: 2, DrainTimeout: 500 * time.Millisecond}
	stopA := run(t, ctx, st.scanner(w, cfg))
	for w.writes.Load() < 10 {
		time.Sleep(10 * time.Millisecond)
	}
	stopA()
	if got := w.writes.Load(); got >= int64(n/cfg.BatchSize) {
		t.Logf("all %d writes happened before the first member stopped; the test proves less", got)
	}

	base := w.writes.Load()
	stopB := run(t, ctx, st.scanner(w, cfg))
	defer stopB()
	for w.writes.Load() < base+10 {
		time.Sleep(10 * time.Millisecond)
	}
	stopC := run(t, ctx, st.scanner(w, cfg))
	defer stopC()
	waitMembers(ctx, t, st.brokers, st.group, 2)
	if got := w.writes.Load(); got >= int64(n/cfg.BatchSize) {
		t.Logf("all %d writes happened before the rebalance completed; the test proves less", got)
	}

	st.checkDelivered(ctx, n, 0)
	waitCommitted(ctx, t, st.brokers, st.group, st.scanTopic, itPartitions)
	st.checkDrained(ctx)
}

// waitMembers waits until group is stable with n members that all hold
// partitions.
func waitMembers(ctx context.Context, t *testing.T, brokers []string, group string, n int) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		if err == nil && len(resp.Groups) == 1 {
			g := resp.Groups[0]
			holding := 0
			for _, m := range g.Members {
				for _, tp := range m.MemberAssignments.Topics {
					if len(tp.Partitions) > 0 {
						holding++
						break
					}
				}
			}
			if g.GroupState == "Stable" && holding == n && len(g.Members) == n {
				return
			}
			last = fmt.Sprintf("state %s, %d members, %d holding partitions", g.GroupState, len(g.Members), holding)
		} else if err != nil {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s never had %d members holding partitions: %s", group, n, last)
}

// consume reads n messages of partition 0 of topic from the start.
func consume(ctx context.Context, t *testing.T, brokers []string, topic string, n int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []kafka.Message
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %s: got %d of %d messages: %v", topic, len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// consumeFor reads partition 0 of topic from offset for d.
func consumeFor(t *testing.T, brokers []string, topic string, offset int64, d time.Duration) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []kafka.Message
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return out
		}
		out = append(out, m)
	}
}

// waitCommitted waits until the committed offsets of group reach the end of
// every partition of topic.
func waitCommitted(ctx context.Context, t *testing.T, brokers []string, group, topic string, partitions int) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	var (
		parts []int
		reqs  []kafka.OffsetRequest
	)
	for p := range partitions {
		parts = append(parts, p)
		reqs = append(reqs, kafka.LastOffsetOf(p))
	}
	lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatal(err)
	}
	end := map[int]int64{}
	for _, p := range lo.Topics[topic] {
		end[p.Partition] = p.LastOffset
	}
	var last string
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		of, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
		if err == nil {
			ok := len(of.Topics[topic]) == partitions
			var b strings.Builder
			for _, p := range of.Topics[topic] {
				fmt.Fprintf(&b, "%d:%d/%d ", p.Partition, p.CommittedOffset, end[p.Partition])
				if p.CommittedOffset != end[p.Partition] {
					ok = false
				}
			}
			if ok {
				return
			}
			last = b.String()
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("committed offsets did not reach the end of %s: %s", topic, last)
}

func deleteTopics(brokers []string, topics ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	_, _ = client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: topics})
}

// createTopic creates topic with its own configs.
func createTopic(ctx context.Context, t *testing.T, brokers []string, topic string, partitions int, configs map[string]string) {
	t.Helper()
	var entries []kafka.ConfigEntry
	for k, v := range configs {
		entries = append(entries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: entries,
	}}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() { deleteTopics(brokers, topic) })
}

// TestScannerBatchTooLarge delivers to a topic whose max.message.bytes
// (4 KiB) is smaller than a batch of its tasks: the broker refuses the
// batch as too large, and the scanner writes its messages one by one, so
// the 40 that fit are delivered and only the one too large on its own goes
// to the failed topic (issue 11, item 2).
func TestScannerBatchTooLarge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := newStack(ctx, t)
	small := fmt.Sprintf("scantest-small-%d", st.sfx)
	createTopic(ctx, t, st.brokers, small, 1, map[string]string{"max.message.bytes": "4096"})

	due := time.Now().Add(-time.Second).UnixMilli()
	var extra []payload.Task
	for i := range 40 {
		tk := task(fmt.Sprintf("%s-fits-%d", st.name(0), i), small, due+int64(i))
		tk.Value = bytes.Repeat([]byte("v"), 300)
		extra = append(extra, tk)
	}
	big := task(st.name(0)+"-big", small, due)
	big.Value = bytes.Repeat([]byte("v"), 8000)
	extra = append(extra, big)
	st.seed(ctx, 0, 0, extra)

	stop := run(t, ctx, st.scanner(st.w, Config{Workers: 1, BatchSize: 100}))
	defer stop()

	got := consume(ctx, t, st.brokers, small, 40)
	got = append(got, consumeFor(t, st.brokers, small, int64(len(got)), time.Second)...)
	if len(got) != 40 {
		t.Errorf("%s got %d messages, want the 40 that fit", small, len(got))
	}
	failed := consume(ctx, t, st.brokers, st.failedTopic, 1)
	failed = append(failed, consumeFor(t, st.brokers, st.failedTopic, 1, time.Second)...)
	if ids := names(failed); len(ids) != 1 || ids[0] != big.Name {
		t.Errorf("failed topic got %v, want %s alone", ids, big.Name)
	}
	if reason, _ := header(failed[0], payload.HeaderError); !strings.Contains(reason, "Message Size Too Large") {
		t.Errorf("delay-error %q", reason)
	}
	waitCommitted(ctx, t, st.brokers, st.group, st.scanTopic, itPartitions)
	st.checkDrained(ctx)
}

// TestScannerGrowsWithPartitions adds partitions to the scan topic while
// two members scan under steady load: the group takes the new partitions
// on without another rebalance, every task is delivered exactly once (a
// zset whose scan tasks moved to a new partition is scanned from one
// partition only), and the committed offsets of the new partitions reach
// their end (issue 11, item 6).
func TestScannerGrowsWithPartitions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	st := newStack(ctx, t)
	cfg := Config{Workers: 4, BatchSize: 100}
	feedCtx, stopFeed := context.WithCancel(ctx)
	fed := make(chan int, 1)
	go func() { fed <- st.feed(feedCtx, 400, 2*time.Second, 250*time.Millisecond) }()
	stopA := run(t, ctx, st.scanner(st.w, cfg))
	defer stopA()
	stopB := run(t, ctx, st.scanner(st.w, cfg))
	defer stopB()
	waitMembers(ctx, t, st.brokers, st.group, 2)
	time.Sleep(2 * time.Second)

	const grown = 2 * itPartitions
	client := &kafka.Client{Addr: kafka.TCP(st.brokers...)}
	resp, err := client.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{
		Topics: []kafka.TopicPartitionsConfig{{Name: st.scanTopic, Count: grown}},
	})
	if err == nil {
		err = resp.Errors[st.scanTopic]
	}
	if err != nil {
		t.Fatal(err)
	}
	added := time.Now()
	waitAssigned(ctx, t, st.brokers, st.group, st.scanTopic, grown)
	t.Logf("all %d partitions assigned %v after they were added", grown, time.Since(added).Round(time.Millisecond))

	time.Sleep(10 * time.Second)
	stopFeed()
	n := <-fed
	d := st.fed(ctx, n)
	if d.duplicated > 0 || d.distinct != n {
		t.Errorf("%d tasks fed: %v", n, d)
	}
	t.Logf("%d tasks fed: %v", n, d)
	waitCommitted(ctx, t, st.brokers, st.group, st.scanTopic, grown)
}

// waitAssigned waits until the members of group hold all partitions of
// topic between them.
func waitAssigned(ctx context.Context, t *testing.T, brokers []string, group, topic string, partitions int) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		if err == nil && len(resp.Groups) == 1 {
			held := map[int]bool{}
			for _, m := range resp.Groups[0].Members {
				for _, tp := range m.MemberAssignments.Topics {
					if tp.Topic == topic {
						for _, p := range tp.Partitions {
							held[p] = true
						}
					}
				}
			}
			if len(held) == partitions && resp.Groups[0].GroupState == "Stable" {
				return
			}
			last = fmt.Sprintf("state %s, %d partitions held", resp.Groups[0].GroupState, len(held))
		} else if err != nil {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s never held the %d partitions of %s: %s", group, partitions, topic, last)
}

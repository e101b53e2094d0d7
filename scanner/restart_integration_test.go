package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/zset"
)

// feed stores tasks for bizTopic at rate per second, each due 0..spread
// from now, and, every tick, produces a scan task up to now+tick for every
// zset holding due entries (as the dispatcher does with its lookahead),
// until ctx ends; then it goes on ticking until no zset holds due
// entries. It returns the number of tasks stored.
func (st *stack) feed(ctx context.Context, rate int, spread, tick time.Duration) int {
	st.t.Helper()
	var (
		n  atomic.Int64
		wg sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		every := 50 * time.Millisecond
		per := rate * int(every) / int(time.Second)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := time.Now()
			var (
				rows    []payload.Task
				entries []zset.Entry
			)
			for range per {
				i := int(n.Add(1)) - 1
				tk := task(st.name(i), st.bizTopic, now.Add(time.Duration(rand.Int64N(int64(spread)))).UnixMilli())
				rows = append(rows, tk)
				entries = append(entries, zset.Entry{ID: tk.ID, ExecAt: tk.ExecAt})
			}
			wctx := context.WithoutCancel(ctx)
			if err := st.store.Put(wctx, rows); err != nil {
				st.t.Error(err)
				return
			}
			if err := st.ix.Writer().Add(wctx, now, entries); err != nil {
				st.t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		deadline := time.Now().Add(time.Hour)
		for {
			select {
			case <-ctx.Done():
				if deadline.After(time.Now().Add(time.Minute)) {
					deadline = time.Now().Add(time.Minute) // the scanners are given that long to finish
				}
			case <-t.C:
			}
			wctx := context.WithoutCancel(ctx)
			until := time.Now().Add(tick).UnixMilli()
			keys, err := st.ix.Reader().DueKeys(wctx, until)
			if err != nil {
				st.t.Error(err)
				return
			}
			if ctx.Err() != nil && (len(keys) == 0 || time.Now().After(deadline)) {
				return
			}
			msgs := make([]kafka.Message, len(keys))
			for i, k := range keys {
				msgs[i] = scantask.Task{Zset: k, Until: until}.Message()
				msgs[i].Topic = st.scanTopic
			}
			if err := st.w.WriteMessages(wctx, msgs...); err != nil {
				st.t.Error(err)
				return
			}
			if ctx.Err() != nil {
				time.Sleep(tick) // t.C does not tick while ctx.Done is ready
			}
		}
	}()
	<-ctx.Done()
	wg.Wait()
	return int(n.Load())
}

// deliveries sums up what bizTopic received of the n fed tasks.
type deliveries struct {
	messages, distinct, duplicated int
	lateness                       []time.Duration // sorted, one per delivered message
}

func (d deliveries) quantile(q float64) time.Duration {
	if len(d.lateness) == 0 {
		return 0
	}
	return d.lateness[int(q*float64(len(d.lateness)-1))]
}

func (d deliveries) String() string {
	return fmt.Sprintf("%d messages, %d distinct, %d duplicated; lateness p50 %v, p99 %v, max %v",
		d.messages, d.distinct, d.duplicated, d.quantile(0.5).Round(time.Millisecond),
		d.quantile(0.99).Round(time.Millisecond), d.quantile(1).Round(time.Millisecond))
}

// fed reads bizTopic until it holds n messages and a second more, and
// checks that every fed task arrived.
func (st *stack) fed(ctx context.Context, n int) deliveries {
	st.t.Helper()
	got := consume(ctx, st.t, st.brokers, st.bizTopic, n)
	got = append(got, consumeFor(st.t, st.brokers, st.bizTopic, int64(len(got)), 2*time.Second)...)
	seen := map[string]int{}
	d := deliveries{messages: len(got)}
	for _, m := range got {
		id, _ := header(m, payload.HeaderID)
		seen[id]++
		if seen[id] == 2 {
			d.duplicated++
		}
		at, _ := header(m, payload.HeaderAt)
		if due, err := time.Parse(time.RFC3339Nano, at); err == nil {
			d.lateness = append(d.lateness, m.Time.Sub(due))
		}
	}
	sort.Slice(d.lateness, func(i, j int) bool { return d.lateness[i] < d.lateness[j] })
	d.distinct = len(seen)
	for i := range n {
		if seen[st.name(i)] == 0 {
			st.t.Errorf("task %d never delivered", i)
		}
	}
	return d
}

// TestScannerRollingRestarts restarts two members one after the other, 12
// times, under steady load: every task is delivered exactly once (issue
// 10, zero duplicates on SIGTERM).
func TestScannerRollingRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 170*time.Second)
	defer cancel()
	st := newStack(ctx, t)
	cfg := Config{Workers: 4, BatchSize: 100}

	feedCtx, stopFeed := context.WithCancel(ctx)
	fed := make(chan int, 1)
	go func() { fed <- st.feed(feedCtx, 400, 2*time.Second, 250*time.Millisecond) }()

	stops := [2]func(){run(t, ctx, st.scanner(st.w, cfg)), run(t, ctx, st.scanner(st.w, cfg))}
	const restarts = 12
	var slowest time.Duration
	for i := range restarts {
		time.Sleep(2 * time.Second)
		start := time.Now()
		stops[i%2]()
		slowest = max(slowest, time.Since(start))
		stops[i%2] = run(t, ctx, st.scanner(st.w, cfg))
	}
	time.Sleep(2 * time.Second)
	stopFeed()
	n := <-fed
	d := st.fed(ctx, n)
	if d.duplicated > 0 || d.distinct != n {
		t.Errorf("%d tasks fed: %v", n, d)
	}
	t.Logf("%d restarts, slowest stop %v; %d tasks fed: %v", restarts, slowest.Round(time.Millisecond), n, d)
	for _, s := range stops {
		s()
	}
}

// refusingWriter answers "unknown topic" for one topic, as kafka-go does
// when the brokers do not auto-create topics.
type refusingWriter struct {
	Writer
	topic string
}

func (w refusingWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	for _, m := range msgs {
		if m.Topic == w.topic {
			return kafka.UnknownTopicOrPartition
		}
	}
	return w.Writer.WriteMessages(ctx, msgs...)
}

// TestScannerStopWithinSession stops a member of two while its steps are
// busy (slow writes) and every zset holds a task for a topic that does not
// exist: the member has drained, committed and left within what the group
// allows after its last heartbeat (consumer.MaxDrain), so no other member
// scans its zsets while it still removes what it produced, and every task
// is delivered exactly once (issue 10).
func TestScannerStopWithinSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st := newStack(ctx, t)
	missing := fmt.Sprintf("scantest-missing-%d", st.sfx)
	const n = 400
	var extra []payload.Task
	for i := range 40 {
		extra = append(extra, task(fmt.Sprintf("%s-missing-%d", st.name(0), i), missing, time.Now().Add(-time.Second).UnixMilli()+int64(i)))
	}
	st.seed(ctx, n, 0, extra)

	single := producer.New(producer.Config{Brokers: st.brokers, BatchSize: 1})
	defer single.Close()
	w := &slowWriter{Writer: refusingWriter{Writer: st.w, topic: missing}, delay: 150 * time.Millisecond}
	cfg := Config{Workers: 2, BatchSize: 5, SingleWriter: refusingWriter{Writer: single, topic: missing}}
	s := st.scanner(w, cfg)
	ctxA, stopA := context.WithCancel(ctx)
	doneA := make(chan error, 1)
	go func() { doneA <- s.Run(ctxA) }()
	for w.writes.Load() < 10 {
		time.Sleep(10 * time.Millisecond)
	}
	stopB := run(t, ctx, st.scanner(w, cfg))
	defer stopB()
	waitMembers(ctx, t, st.brokers, st.group, 2)

	start := time.Now()
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took > consumer.MaxDrain {
		t.Errorf("the stopping member took %v to drain, commit and leave; the group allows %v", took, consumer.MaxDrain)
	}
	t.Logf("stop took %v (DrainTimeout %v, group allows %v)", took.Round(time.Millisecond), s.cfg.DrainTimeout, consumer.MaxDrain)
	st.checkDelivered(ctx, n, 0)
}

// crashEnv is what a scanner in a child process needs to join a test's
// stack.
type crashEnv struct {
	Brokers                                 []string
	ZK, Redis, Table, Prefix                string
	Group, ScanTopic, BizTopic, FailedTopic string
	Salts, Shards                           int
}

const crashEnvVar = "DELAYQ_SCANNER_CRASH_MEMBER"

// TestMain runs a scanner for TestScannerCrashRecovery when started as its
// child process, and the tests otherwise.
func TestMain(m *testing.M) {
	if v := os.Getenv(crashEnvVar); v != "" {
		os.Exit(runCrashMember(v))
	}
	os.Exit(m.Run())
}

func runCrashMember(v string) int {
	var ce crashEnv
	if err := json.Unmarshal([]byte(v), &ce); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	store, err := hbase.New(hbase.Config{ZK: ce.ZK, Table: ce.Table, Salts: ce.Salts})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: ce.Redis})
	ix, err := zset.New(rdb, zset.Config{Prefix: ce.Prefix, Shards: ce.Shards})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w := producer.New(producer.Config{Brokers: ce.Brokers})
	s, err := New(Config{Brokers: ce.Brokers, GroupID: ce.Group, Topic: ce.ScanTopic, FailedTopic: ce.FailedTopic,
		Workers: 4, BatchSize: 100,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}, roles(ix), store, w)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := s.Run(context.Background()); err != nil { // until killed
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestScannerCrashRecovery kills -9 one of two members under steady load:
// no task is lost, and the worst lateness (how long the dead member's zsets
// waited) is about the group session timeout. Duplicates are allowed
// after a crash and reported.
func TestScannerCrashRecovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	st := newStack(ctx, t)
	ce, err := json.Marshal(crashEnv{
		Brokers: st.brokers, ZK: st.zk, Redis: st.redis, Table: st.table, Prefix: st.prefix,
		Group: st.group, ScanTopic: st.scanTopic, BizTopic: st.bizTopic, FailedTopic: st.failedTopic,
		Salts: itSalts, Shards: itShards,
	})
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), crashEnvVar+"="+string(ce))
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()

	feedCtx, stopFeed := context.WithCancel(ctx)
	fed := make(chan int, 1)
	go func() { fed <- st.feed(feedCtx, 400, 2*time.Second, 250*time.Millisecond) }()
	stop := run(t, ctx, st.scanner(st.w, Config{Workers: 4, BatchSize: 100}))
	defer stop()
	waitMembers(ctx, t, st.brokers, st.group, 2)
	time.Sleep(3 * time.Second)

	killed := time.Now()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	waitMembers(ctx, t, st.brokers, st.group, 1)
	t.Logf("the survivor holds every partition %v after the kill (session timeout %v)",
		time.Since(killed).Round(time.Millisecond), consumer.SessionTimeout)
	time.Sleep(5 * time.Second)
	stopFeed()
	n := <-fed
	d := st.fed(ctx, n)
	t.Logf("kill -9 of one of two members, %d tasks fed: %v", n, d)
	if worst := d.quantile(1); worst > consumer.SessionTimeout+5*time.Second {
		t.Errorf("worst lateness %v, want about the session timeout %v", worst, consumer.SessionTimeout)
	}
}

package ingest

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// proxy forwards TCP connections to target while it is up. While it is
// down it cuts the open connections and closes new ones at once, as a
// dependency that went away does; the real service behind it stays up for
// everyone else.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	up     bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, up: true, conns: map[net.Conn]bool{}}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		ln.Close()
		p.set(false)
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// set brings the proxy up or down.
func (p *proxy) set(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = up
	if !up {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		up := p.up
		p.mu.Unlock()
		if !up {
			c.Close()
			continue
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if !p.up {
			p.mu.Unlock()
			c.Close()
			b.Close()
			continue
		}
		p.conns[c], p.conns[b] = true, true
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		p.wg.Go(func() { pipe(b, c) })
		p.wg.Go(func() { pipe(c, b) })
	}
}

// gauge reads the value of the series of name with the label pairs.
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue series
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestRunRealStackRedisOutage takes Redis away from a running ingester
// (through a proxy in front of the shared Redis) while input arrives, for
// long enough to span many retries, and brings it back: nothing valid goes
// to the failed topic, nothing is committed while Redis is away, and once
// it is back every task is stored and indexed and the input committed.
func TestRunRealStackRedisOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	rs := newRealStack(t, ctx)
	px := newProxy(t, rs.redisAddr)
	rdb := redis.NewClient(&redis.Options{Addr: px.addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	ix, err := zset.New(rdb, zset.Config{Prefix: rs.prefix})
	if err != nil {
		t.Fatal(err)
	}
	client := &kafka.Client{Addr: kafka.TCP(rs.brokers...), Timeout: 5 * time.Second}
	reg := prometheus.NewRegistry()
	in, err := New(Config{Brokers: rs.brokers, GroupID: rs.group, Input: rs.input, Slow: rs.slow, Failed: rs.failed,
		BatchSize: 50, Registerer: reg}, rs.store, roles(ix), rs.w)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(runCtx) }()
	waitStable(t, ctx, client, rs.group, 1)

	px.set(false)
	t.Log("redis down")
	const n, bad = 300, 3
	t0 := time.Now().Add(10 * time.Minute).Truncate(time.Millisecond)
	var msgs []kafka.Message
	for i := range n + bad {
		h := []kafka.Header{
			{Key: payload.HeaderTopic, Value: []byte("biz")},
			{Key: payload.HeaderID, Value: []byte("outage-" + strconv.Itoa(i))},
			{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(t0.UnixMilli()+int64(i), 10))},
		}
		if i >= n {
			h[2].Value = []byte("never")
		}
		msgs = append(msgs, kafka.Message{Topic: rs.input, Key: []byte(strconv.Itoa(i)), Value: []byte("v"), Headers: h, Time: time.Now()})
	}
	producer := &kafka.Writer{Addr: kafka.TCP(rs.brokers...), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond}
	defer producer.Close()
	produce(t, ctx, producer, msgs)

	// Stalled: the stage says so, and stays so over many retries.
	for gauge(t, reg, "delayq_stage_stalled", "stage", "ingest") != 1 {
		if ctx.Err() != nil {
			t.Fatal("the ingester never stalled")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(8 * time.Second)
	lag, err := groupLag(ctx, client, rs.group, rs.input)
	if err != nil {
		t.Fatal(err)
	}
	// The first Redis call of a batch is the op-flag read (lifecycle.go),
	// then the index add: either stalls.
	retries := gauge(t, reg, "delayq_stage_retries_total", "stage", "ingest", "op", opAdd) +
		gauge(t, reg, "delayq_stage_retries_total", "stage", "ingest", "op", opFlagged)
	t.Logf("after 8s of outage: lag %d of %d, %v add and op-flag retries", lag, n+bad, retries)
	if lag < n {
		t.Errorf("lag %d during the outage: batches with valid tasks were committed", lag)
	}
	if retries < 3 {
		t.Errorf("%v add retries in 8 s", retries)
	}

	px.set(true)
	back := time.Now()
	t.Log("redis up")
	for {
		lag, err := groupLag(ctx, client, rs.group, rs.input)
		if err == nil && lag == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("input not committed after redis came back: lag %d, %v", lag, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("all committed %v after redis came back", time.Since(back).Round(time.Millisecond))
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if g := gauge(t, reg, "delayq_stage_stalled", "stage", "ingest"); g != 0 {
		t.Errorf("still stalled: %v", g)
	}

	failed := readTopic(t, ctx, client, rs.brokers, rs.failed)
	if len(failed) != bad {
		t.Errorf("failed topic holds %d messages, want the %d malformed", len(failed), bad)
	}
	for _, m := range failed {
		if k, _ := strconv.Atoi(string(m.Key)); k < n {
			reason, _ := header(m, payload.HeaderError)
			t.Errorf("valid task %s in the failed topic: %s", m.Key, reason)
		}
	}
	refs := make([]payload.Ref, n)
	for i := range refs {
		refs[i] = payload.Ref{ID: payload.TaskID("outage-" + strconv.Itoa(i)), ExecAt: t0.UnixMilli() + int64(i)}
	}
	rows, err := rs.store.Get(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if r == nil {
			t.Errorf("task %d not stored", i)
		}
	}
	indexed := map[zset.Entry]bool{}
	until := t0.UnixMilli() + n
	keys, err := rs.ix.Reader().DueKeys(ctx, until)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		entries, err := rs.ix.Reader().Due(ctx, k, until, 5000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			indexed[e] = true
		}
	}
	for _, r := range refs {
		if !indexed[zset.Entry{ID: r.ID, ExecAt: r.ExecAt}] {
			t.Errorf("task %+v not indexed", r)
		}
	}
}

// countingStore counts the successful puts of every task name.
type countingStore struct {
	Store
	mu   sync.Mutex
	puts map[string]int
}

func (c *countingStore) Put(ctx context.Context, tasks []payload.Task) error {
	if err := c.Store.Put(ctx, tasks); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range tasks {
		c.puts[t.Name]++
	}
	return nil
}

// TestRunRealStackRollingRestarts restarts two ingesters of one group in
// turn, gracefully, while input flows, and checks that every input message
// was handled exactly once: each stop and each join ends a generation, whose
// lanes commit the batch in hand before the partitions move, so no batch is
// read twice (a re-read would re-add a task the scanner may already have
// delivered and removed: a duplicate).
func TestRunRealStackRollingRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	rs := newRealStack(t, ctx)
	client := &kafka.Client{Addr: kafka.TCP(rs.brokers...), Timeout: 5 * time.Second}
	store := &countingStore{Store: rs.store, puts: map[string]int{}}
	reg := prometheus.NewRegistry()
	cfg := Config{Brokers: rs.brokers, GroupID: rs.group, Input: rs.input, Slow: rs.slow, Failed: rs.failed,
		BatchSize: 100, Registerer: reg}

	type member struct {
		stop func()
		done chan error
	}
	start := func() member {
		in, err := New(cfg, store, roles(rs.ix), rs.w)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		m := member{stop: stop, done: make(chan error, 1)}
		go func() { m.done <- in.Run(runCtx) }()
		return m
	}
	members := []member{start(), start()}
	waitStable(t, ctx, client, rs.group, 2)

	// Steady input: 40 messages every 20 ms, on the input and slow topics.
	producer := &kafka.Writer{Addr: kafka.TCP(rs.brokers...), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: 2 * time.Millisecond}
	defer producer.Close()
	t0 := time.Now().Add(10 * time.Minute).Truncate(time.Millisecond)
	prodCtx, stopProducing := context.WithCancel(ctx)
	produced := make(chan int, 1)
	go func() {
		n := 0
		for prodCtx.Err() == nil {
			msgs := make([]kafka.Message, 40)
			for i := range msgs {
				topic := rs.input
				if n%5 == 4 {
					topic = rs.slow
				}
				msgs[i] = kafka.Message{Topic: topic, Key: []byte(strconv.Itoa(n)), Value: []byte("v"), Time: time.Now(), Headers: []kafka.Header{
					{Key: payload.HeaderTopic, Value: []byte("biz")},
					{Key: payload.HeaderID, Value: []byte("roll-" + strconv.Itoa(n))},
					{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(t0.UnixMilli()+int64(n), 10))},
				}}
				n++
			}
			produce(t, ctx, producer, msgs)
			time.Sleep(20 * time.Millisecond)
		}
		produced <- n
	}()

	const restarts = 6
	for i := range restarts {
		time.Sleep(time.Second)
		k := i % 2
		members[k].stop()
		if err := <-members[k].done; err != nil {
			t.Errorf("restart %d: Run: %v", i, err)
		}
		waitStable(t, ctx, client, rs.group, 1)
		members[k] = start()
		waitStable(t, ctx, client, rs.group, 2)
	}
	time.Sleep(time.Second)
	stopProducing()
	n := <-produced

	for {
		lag, err := groupLag(ctx, client, rs.group, rs.input, rs.slow)
		if err == nil && lag == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("input not committed: lag %d, %v", lag, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, m := range members {
		m.stop()
		if err := <-m.done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}

	store.mu.Lock()
	defer store.mu.Unlock()
	missing, twice := 0, 0
	for i := range n {
		switch c := store.puts["roll-"+strconv.Itoa(i)]; {
		case c == 0:
			missing++
		case c > 1:
			twice++
		}
	}
	commitErrs := gauge(t, reg, "delayq_ingest_commit_errors_total")
	t.Logf("%d messages over %d restarts: %d handled twice, %d missing, %v commit errors", n, restarts, twice, missing, commitErrs)
	if missing != 0 || twice != 0 || commitErrs != 0 {
		t.Errorf("%d handled twice, %d missing, %v commit errors; want none", twice, missing, commitErrs)
	}
	if failed := readTopic(t, ctx, client, rs.brokers, rs.failed); len(failed) != 0 {
		t.Errorf("%d messages in the failed topic", len(failed))
	}
}

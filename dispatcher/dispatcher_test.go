package dispatcher

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/dispatcher/redlock"
	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/topics"
	"github.com/delayq/delayq/zset"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"zero is default", Config{}, false},
		{"one second", Config{Tick: time.Second}, false},
		{"sub-second", Config{Tick: 500 * time.Millisecond}, true},
		{"fractional", Config{Tick: 1500 * time.Millisecond}, true},
		{"negative grace", Config{RetireGrace: -time.Second}, true},
		{"scan into input", Config{ScanTopic: topics.Input}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.setDefaults()
			if err := cfg.Validate(); (err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
	cfg := Config{Tick: 10 * time.Second}
	cfg.setDefaults()
	if cfg.RetireGrace != time.Minute || cfg.BacklogEvery != time.Minute || cfg.ScanTopic != topics.Scan || cfg.LockPrefix != "delayq" {
		t.Fatalf("defaults for a 10s tick: %+v", cfg)
	}
	cfg = Config{Tick: 5 * time.Minute}
	cfg.setDefaults()
	if cfg.RetireGrace != 10*time.Minute || cfg.BacklogEvery != 5*time.Minute {
		t.Fatalf("defaults for a 5m tick: %+v", cfg)
	}
	if cfg.Lookahead != 5*time.Minute {
		t.Fatalf("default lookahead %v, want one tick", cfg.Lookahead)
	}
	cfg = Config{Tick: time.Second, Lookahead: -1}
	cfg.setDefaults()
	if cfg.Lookahead != 0 {
		t.Fatalf("negative lookahead became %v, want none", cfg.Lookahead)
	}
	if _, err := New(Config{}, nil, nil, nil); err == nil {
		t.Fatal("New with nil dependencies succeeded")
	}
}

func TestNextTickAndLockName(t *testing.T) {
	d := &Dispatcher{cfg: Config{Tick: 7 * time.Second, LockPrefix: "p"}}
	now := time.UnixMilli(1_738_335_601_234)
	next := d.nextTick(now)
	if next.UnixMilli()%7000 != 0 || !next.After(now) || next.Sub(now) > 7*time.Second {
		t.Fatalf("nextTick(%v) = %v", now, next)
	}
	if on := d.nextTick(next); on.Sub(next) != 7*time.Second {
		t.Fatalf("nextTick on a tick = %v, want the following tick", on)
	}
	if got := d.lockName(time.Unix(1_738_335_600, 0)); got != "p:dispatch:1738335600" {
		t.Fatalf("lockName = %q", got)
	}
}

func TestBucketize(t *testing.T) {
	now := int64(10 * 24 * 3600 * 1000)
	seg := func(endIn time.Duration, n int64) zset.SegmentCount {
		return zset.SegmentCount{End: now + endIn.Milliseconds(), Pending: n}
	}
	got := bucketize([]zset.SegmentCount{
		seg(-time.Hour, 1), seg(0, 2), // overdue
		seg(time.Second, 4), seg(time.Minute, 8), // under_1m
		seg(time.Hour, 16),                             // under_1h
		seg(23*time.Hour, 32),                          // under_1d
		seg(25*time.Hour, 64), seg(720*time.Hour, 128), // later
	}, now)
	if want := []int64{3, 12, 16, 32, 192}; !slices.Equal(got, want) {
		t.Fatalf("bucketize = %v, want %v", got, want)
	}
}

// fakeScanner is the Writer of the unit tests: it records every scan task
// and, like a scanner, drains what the task covers from the index: an entry
// already due is delivered at once, a later one (up to until) when its
// exec_at comes.
type fakeScanner struct {
	ix *zset.Index

	mu        sync.Mutex
	fail      int // fail this many writes first
	writes    [][]scantask.Task
	scanned   map[zset.Entry][]int64 // entry -> tick (write time) of every scan that delivered it
	delivered map[zset.Entry][]int64 // entry -> when those scans delivered it
}

func (f *fakeScanner) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return errors.New("broker down")
	}
	var batch []scantask.Task
	for _, m := range msgs {
		s, err := scantask.Parse(m)
		if err != nil {
			return err
		}
		if m.Topic != "scan" {
			return errors.New("wrong topic " + m.Topic)
		}
		batch = append(batch, s)
		for _, k := range s.Keys() {
			es, err := f.ix.Reader().Due(ctx, k, s.Until, 0)
			if err != nil {
				return err
			}
			now := time.Now().UnixMilli()
			for _, e := range es {
				f.scanned[e] = append(f.scanned[e], now)
				f.delivered[e] = append(f.delivered[e], max(now, e.ExecAt))
			}
			if err := f.ix.Reader().Remove(ctx, k, es); err != nil {
				return err
			}
		}
	}
	f.writes = append(f.writes, batch)
	return nil
}

func counter(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue() + m.GetGauge().GetValue()
}

// TestTwoDispatchersShareRedis runs two dispatchers against one miniredis
// in a synctest bubble for six 1-minute ticks of fake time: at every tick
// exactly one wins, every task is scanned exactly once, by the last tick
// before its exec_at (the lookahead of one tick) or the first after it when
// it was overdue, and delivered at its exec_at, never before; nothing due
// after the lookahead is scanned, drained segments retire and a failed
// write loses nothing. Zsets seal at 5 members, so the 50 tasks due at +90s
// spread over shard families and reach the scanner as group tasks.
func TestTwoDispatchersShareRedis(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		mr := miniredis.NewMiniRedis()
		defer mr.Close()
		newClient := func() *redis.Client {
			return redis.NewClient(&redis.Options{
				// An IP address: go-redis resolves a host name at start,
				// and DNS lookups cannot run inside a synctest bubble.
				Addr:   "127.0.0.1:6379",
				Dialer: func(context.Context, string, string) (net.Conn, error) { return mr.Dial() },
			})
		}
		c := newClient()
		defer c.Close()
		ix, err := zset.New(c, zset.Config{Shards: 4, Fill: 5})
		if err != nil {
			t.Fatal(err)
		}

		// The bubble starts at 2000-01-01 00:00:00 UTC, a tick boundary.
		start := time.Now()
		at := func(d time.Duration) int64 { return start.Add(d).UnixMilli() }
		entries := []zset.Entry{
			{ID: 1, ExecAt: at(-time.Hour)},                       // overdue: first tick (1m)
			{ID: 2, ExecAt: at(30 * time.Second)},                 // no tick before it: tick 1m
			{ID: 3, ExecAt: at(time.Minute)},                      // exactly on tick 1m
			{ID: 4, ExecAt: at(time.Minute + time.Millisecond)},   // tick 1m looks ahead to 2m
			{ID: 5, ExecAt: at(3*time.Minute + 30*time.Second)},   // tick 3m: its first write fails, the retry succeeds
			{ID: 6, ExecAt: at(time.Hour)},                        // later than the test
			{ID: 7, ExecAt: at(2 * time.Minute)},                  // tick 1m (until = 2m, inclusive)
			{ID: 8, ExecAt: at(2*time.Minute + time.Millisecond)}, // tick 2m
		}
		for i := range 50 {
			entries = append(entries, zset.Entry{ID: uint64(100 + i), ExecAt: at(90 * time.Second)}) // tick 1m
		}
		if err := ix.Writer().Add(ctx, start, entries); err != nil {
			t.Fatal(err)
		}

		scanner := &fakeScanner{ix: ix, scanned: map[zset.Entry][]int64{}, delivered: map[zset.Entry][]int64{}}
		var ds []*Dispatcher
		var regs []*prometheus.Registry
		var wg sync.WaitGroup
		for range 2 {
			c := newClient()
			defer c.Close()
			dix, err := zset.New(c, zset.Config{Shards: 4, Fill: 5})
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			d, err := New(Config{ScanTopic: "scan", Registerer: reg}, roles(dix), redlock.New(c), scanner)
			if err != nil {
				t.Fatal(err)
			}
			ds, regs = append(ds, d), append(regs, reg)
			wg.Go(func() {
				if err := d.Run(ctx); err != nil {
					t.Errorf("Run: %v", err)
				}
			})
		}

		// Ticks at 1m, 2m, 3m (the first write fails and is retried), 4m, 5m, 6m.
		time.Sleep(2*time.Minute + 30*time.Second)
		synctest.Wait()
		scanner.mu.Lock()
		scanner.fail = 1
		scanner.mu.Unlock()
		time.Sleep(4 * time.Minute)
		synctest.Wait()
		cancel()
		wg.Wait()

		var won, lost, failed float64
		for _, d := range ds {
			won += counter(t, d.metrics.ticks.WithLabelValues(resultWon))
			lost += counter(t, d.metrics.ticks.WithLabelValues(resultLost))
			failed += counter(t, d.metrics.ticks.WithLabelValues(resultError))
		}
		if won != 6 || failed != 0 || lost != 6 {
			t.Fatalf("ticks won %v, error %v, lost %v; want 6, 0, 6 (one winner per tick, a failed write retried)", won, failed, lost)
		}

		want := map[uint64]time.Duration{1: time.Minute, 2: time.Minute, 3: time.Minute, 4: time.Minute,
			5: 3 * time.Minute, 7: time.Minute, 8: 2 * time.Minute}
		for i := range 50 {
			want[uint64(100+i)] = time.Minute
		}
		for _, e := range entries {
			got := scanner.scanned[e]
			tick, due := want[e.ID]
			switch {
			case !due && len(got) > 0:
				t.Errorf("entry %d (exec_at +%v) scanned at %v, beyond the lookahead", e.ID, time.UnixMilli(e.ExecAt).Sub(start), got)
			case due && (len(got) != 1 || got[0] < at(tick) || got[0] > at(tick)+time.Second.Milliseconds()):
				t.Errorf("entry %d scanned at %v, want once at +%v (%d), or within the retry's second after it", e.ID, got, tick, at(tick))
			}
			for _, d := range scanner.delivered[e] {
				if d < e.ExecAt {
					t.Errorf("entry %d delivered at %d, before its exec_at %d", e.ID, d, e.ExecAt)
				}
				if e.ExecAt >= at(tick) && d != e.ExecAt {
					t.Errorf("entry %d, scanned ahead of time, delivered at %d, want its exec_at %d", e.ID, d, e.ExecAt)
				}
			}
		}
		more := 0 // zsets carried by group tasks beyond their head
		for _, batch := range scanner.writes {
			heads := make(map[string]bool)
			for _, s := range batch {
				if s.Until != batch[0].Until {
					t.Fatalf("one batch mixes ticks: %+v", batch)
				}
				if heads[s.Zset] {
					t.Fatalf("one batch holds two scan tasks of group %s: %+v", s.Zset, batch)
				}
				heads[s.Zset] = true
				more += len(s.More)
			}
		}
		if more == 0 {
			t.Fatal("no scan task carried more than one zset: the 50 tasks due at +90s should fill several shard families")
		}
		var emitted float64
		for _, d := range ds {
			emitted += counter(t, d.metrics.emitted)
		}
		if emitted == 0 || int(emitted) != countTasks(scanner.writes) {
			t.Fatalf("scan_tasks_emitted_total = %v, writes hold %d", emitted, countTasks(scanner.writes))
		}

		// Segments 00:00 (which also took the overdue entry), 00:01 and
		// 00:02 were drained and ended before 6m - 2m (the grace): retired.
		// 01:00 still holds entry 6.
		segs, err := ix.Maintenance().Backlog(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range segs {
			names = append(names, s.Segment)
		}
		if want := []string{"200001010100"}; !slices.Equal(names, want) {
			t.Fatalf("registry after 6 ticks = %v, want %v", names, want)
		}

		// The winner of the last tick refreshed the backlog gauge (entry 6
		// is due in under an hour), the loser dropped its series.
		var exporters int
		for _, reg := range regs {
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() != "delayq_pending_tasks" {
					continue
				}
				exporters++
				for _, m := range mf.GetMetric() {
					want := 0.0
					if m.GetLabel()[0].GetValue() == "under_1h" {
						want = 1
					}
					if m.GetGauge().GetValue() != want {
						t.Errorf("pending_tasks{%s} = %v, want %v", m.GetLabel()[0].GetValue(), m.GetGauge().GetValue(), want)
					}
				}
			}
		}
		if exporters != 1 {
			t.Fatalf("%d instances export pending_tasks, want 1", exporters)
		}
	})
}

func countTasks(writes [][]scantask.Task) int {
	n := 0
	for _, w := range writes {
		n += len(w)
	}
	return n
}

// TestTickRedisDown: with Redis gone a tick is an error, not a loss, and
// writes nothing.
func TestTickRedisDown(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	ix, err := zset.New(c, zset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	scanner := &fakeScanner{ix: ix, scanned: map[zset.Entry][]int64{}, delivered: map[zset.Entry][]int64{}}
	d, err := New(Config{Tick: time.Second, ScanTopic: "scan"}, roles(ix), redlock.New(c), scanner)
	if err != nil {
		t.Fatal(err)
	}
	at := d.nextTick(time.Now())
	if err := ix.Writer().Add(context.Background(), at, []zset.Entry{{ID: 1, ExecAt: at.UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	if got := d.tick(context.Background(), at); got != resultWon || len(scanner.writes) != 1 {
		t.Fatalf("tick with Redis up = %s, %d writes; want won, 1", got, len(scanner.writes))
	}
	if got := d.tick(context.Background(), at); got != resultLost {
		t.Fatalf("second try at the same tick = %s, want lost", got)
	}
	mr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if got := d.tick(ctx, at.Add(time.Second)); got != resultError || len(scanner.writes) != 1 {
		t.Fatalf("tick with Redis down = %s, %d writes; want error, 1", got, len(scanner.writes))
	}
}

// TestTickStallsUntilRedisReturns: a tick whose Redis is down retries the
// lock until Redis is back within the tick's time, then wins and emits:
// one WARN line for the stall, one INFO line for the recovery.
func TestTickStallsUntilRedisReturns(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	ix, err := zset.New(c, zset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	scanner := &fakeScanner{ix: ix, scanned: map[zset.Entry][]int64{}, delivered: map[zset.Entry][]int64{}}
	// A 2 s tick: its turn (until the next tick) outlasts the 1 s outage.
	d, err := New(Config{Tick: 2 * time.Second, ScanTopic: "scan", Backoff: retry.Backoff{Base: 50 * time.Millisecond, Max: 200 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, roles(ix), redlock.New(c), scanner)
	if err != nil {
		t.Fatal(err)
	}
	at := d.nextTick(time.Now())
	if err := ix.Writer().Add(context.Background(), at, []zset.Entry{{ID: 1, ExecAt: at.UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	mr.Close()
	go func() {
		time.Sleep(time.Second)
		if err := mr.Restart(); err != nil {
			t.Error(err)
		}
	}()
	if got := d.tick(context.Background(), at); got != resultWon || len(scanner.writes) != 1 {
		t.Fatalf("tick across a 1 s Redis outage = %s, %d writes; want won, 1", got, len(scanner.writes))
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || strings.Count(out, "stage recovered") != 1 {
		t.Fatalf("want one WARN and one recovery line, got:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

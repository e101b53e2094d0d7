package scanner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
)

// The tests below run in testing/synctest bubbles: time is fake and moves
// only when every goroutine of the bubble waits, so a step takes no time
// and every delivery time is exact.

// sentAt records when each task was written (by delay-id).
type sentAt struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *sentAt) broker(next broker) broker {
	return func(msgs []kafka.Message) error {
		var err error
		if next != nil {
			err = next(msgs)
		}
		if err != nil {
			return err // a per-message answer is recorded by the alone write
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.at == nil {
			s.at = map[string]time.Time{}
		}
		for _, m := range msgs {
			id, _ := header(m, payload.HeaderID)
			s.at[id+"@"+m.Topic] = time.Now()
		}
		return nil
	}
}

func (s *sentAt) get(name, topic string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.at[name+"@"+topic]
	return at, ok
}

// With the dispatcher's lookahead a scan task covers entries not due yet:
// the worker delivers each at its exec_at, never before, and a zset waiting
// for its next entry does not hold up another zset of the same worker.
func TestWorkDeliversAtExecAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Config{})
		var sent sentAt
		e.fail(sent.broker(nil))
		now := time.Now()
		a := []payload.Task{
			task("a1", "orders", now.Add(300*time.Millisecond).UnixMilli()),
			task("a2", "orders", now.Add(600*time.Millisecond).UnixMilli()),
		}
		b := task("b1", "orders", now.Add(-time.Second).UnixMilli())
		e.put("A", a)
		e.put("B", []payload.Task{b})
		until := now.Add(time.Second).UnixMilli()
		p := e.scan(context.Background(),
			scantask.Task{Zset: "A", Until: until}, scantask.Task{Zset: "A", Until: until},
			scantask.Task{Zset: "B", Until: until})

		for _, tk := range append(a, b) {
			at, ok := sent.get(tk.Name, "orders")
			switch want := time.UnixMilli(max(tk.ExecAt, now.UnixMilli())); {
			case !ok:
				t.Errorf("%s not delivered", tk.Name)
			case !at.Equal(want):
				t.Errorf("%s delivered at %v, want %v", tk.Name, at.Sub(now), want.Sub(now))
			}
		}
		if got, ok := p.pending(); !ok || got != 3 {
			t.Errorf("commit point %d, %v; want 3: every task finished", got, ok)
		}
	})
}

// slowStore answers Get after delay, in the bubble's fake time.
type slowStore struct {
	Store
	delay time.Duration
}

func (s slowStore) Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error) {
	time.Sleep(s.delay)
	return s.Store.Get(ctx, refs)
}

// A step loads its tasks Prefetch before they fall due, so a store that
// takes 40 ms to answer adds nothing to the lateness, and nothing goes out
// before its exec_at; with no prefetch the answer time is lateness. An
// entry inside the prefetch window is not taken for a held one.
func TestWorkPrefetches(t *testing.T) {
	for _, tc := range []struct {
		prefetch time.Duration
		want     []time.Duration // ms after the start, of t1..t4
	}{
		{0, []time.Duration{300, 340, 650, 650}},  // the default, 50 ms; t3 and t4 share the step for 650 ms
		{-1, []time.Duration{340, 380, 690, 690}}, // none: 40 ms late (t2 was due when t1 went out)
	} {
		t.Run(fmt.Sprint(tc.prefetch), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, Config{Hold: fakeHold{}}) // a hold that holds nothing back
				cfg := e.s.cfg
				cfg.Prefetch, cfg.Registerer = tc.prefetch, prometheus.NewRegistry()
				var err error
				if e.s, err = New(cfg, e.ix, slowStore{e.store, 40 * time.Millisecond}, e.w); err != nil {
					t.Fatal(err)
				}
				var sent sentAt
				e.fail(sent.broker(nil))
				now := time.Now()
				ts := []payload.Task{
					task("t1", "orders", now.Add(300*time.Millisecond).UnixMilli()),
					task("t2", "orders", now.Add(340*time.Millisecond).UnixMilli()), // its wake is when t1 goes out
					task("t3", "orders", now.Add(620*time.Millisecond).UnixMilli()),
					task("t4", "orders", now.Add(650*time.Millisecond).UnixMilli()),
				}
				e.put("A", ts)
				e.scan(context.Background(), scantask.Task{Zset: "A", Until: now.Add(time.Second).UnixMilli()})
				for i, want := range tc.want {
					at, ok := sent.get(ts[i].Name, "orders")
					if want := now.Add(want * time.Millisecond); !ok || !at.Equal(want) {
						t.Errorf("%s delivered at %v (%v), want %v", ts[i].Name, at.Sub(now), ok, want.Sub(now))
					}
				}
			})
		})
	}
}

// Due entries of several zsets held by one worker go out together: one
// store Get and one write.
func TestWorkStepsZsetsTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Config{})
		var scans []scantask.Task
		var want []string
		for i := range 3 {
			tk := task(fmt.Sprintf("t%d", i), "orders", e.now.Add(-time.Second).UnixMilli())
			key := fmt.Sprintf("z%d", i)
			e.put(key, []payload.Task{tk})
			scans = append(scans, scantask.Task{Zset: key, Until: e.now.UnixMilli()})
			want = append(want, tk.Name)
		}
		p := e.scan(context.Background(), scans...)
		if len(e.w.calls) != 1 || len(e.w.calls[0]) != 3 {
			t.Fatalf("writes %v, want one of 3 messages", e.w.calls)
		}
		if got := names(e.w.calls[0]); !slices.Equal(got, want) {
			t.Errorf("delivered %v, want %v", got, want)
		}
		if off, ok := p.pending(); !ok || off != 3 {
			t.Errorf("commit point %d, %v; want 3", off, ok)
		}
		for i := range 3 {
			if rest := e.ix.pending(fmt.Sprintf("z%d", i)); len(rest) != 0 {
				t.Errorf("zset z%d still holds %v", i, rest)
			}
		}
	})
}

// Workers commit only finished scan tasks, a duplicate scan task delivers
// nothing twice, and nothing starts after stop.
func TestWorkCommitsFinishedOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Config{})
		e.put("z", tasks(2, "orders", e.now.Add(-time.Minute).UnixMilli()))
		scan := scantask.Task{Zset: "z", Until: e.now.UnixMilli()}
		p := e.scan(context.Background(), scan, scan)
		if off, ok := p.pending(); !ok || off != 2 {
			t.Fatalf("pending = %d, %v; want 2", off, ok)
		}
		if n := len(e.byTopic("orders")); n != 2 {
			t.Errorf("delivered %d, want 2 (duplicate scan task delivers nothing twice)", n)
		}

		e.put("z", tasks(1, "audit", e.now.Add(-time.Minute).UnixMilli()))
		stopped, stop := context.WithCancel(context.Background())
		stop()
		p = e.scan(stopped, scan)
		if _, ok := p.pending(); ok {
			t.Error("a scan task skipped on stop was committed")
		}
		if n := len(e.byTopic("audit")); n != 0 {
			t.Errorf("delivered %d after stop, want none", n)
		}
	})
}

// A stop while tasks wait for their entries returns at once and leaves
// those tasks unfinished for the next owner.
func TestWorkStopsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Config{})
		tk := task("later", "orders", e.now.Add(time.Hour).UnixMilli())
		e.put("z", []payload.Task{tk})
		ctx, stop := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, stop)
		start := time.Now()
		p := e.scan(ctx, scantask.Task{Zset: "z", Until: tk.ExecAt})
		if d := time.Since(start); d != 200*time.Millisecond {
			t.Errorf("work returned %v after start, want at the stop (200ms)", d)
		}
		if _, ok := p.pending(); ok {
			t.Error("a task still waiting was committed")
		}
		if n := len(e.byTopic("orders")); n != 0 {
			t.Errorf("delivered %d, want none", n)
		}
		if v := value(e.s.m.scanTasks); v != 1 {
			t.Errorf("scan_tasks_total = %v, want 1 (abandoned)", v)
		}
	})
}

// The whole drain fits in DrainTimeout, which fits in the group session
// (issue 10, zero duplicates on SIGTERM): the entries settled by many
// zsets are removed in one pipelined call, and a step stuck in an outage
// gives up in time.
func TestDrainBounded(t *testing.T) {
	t.Run("removals go in one round trip", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.ix.removeDelay = 500 * time.Millisecond // a slow Redis
			var scans []scantask.Task
			const zsets = 40
			for i := range zsets {
				key := fmt.Sprintf("z%d", i)
				// One entry due now (delivered, settled) and one in an hour
				// (the scan task waits for it, holding what it settled).
				e.put(key, []payload.Task{
					task(key+"-now", "orders", e.now.UnixMilli()),
					task(key+"-later", "orders", e.now.Add(time.Hour).UnixMilli()),
				})
				scans = append(scans, scantask.Task{Zset: key, Until: e.now.Add(time.Hour).UnixMilli()})
			}
			ctx, stop := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, stop)
			e.scan(ctx, scans...)
			if d := time.Since(e.now) - time.Second; d > e.s.cfg.DrainTimeout {
				t.Errorf("drain took %v, more than DrainTimeout %v", d, e.s.cfg.DrainTimeout)
			}
			if n := len(e.byTopic("orders")); n != zsets {
				t.Fatalf("delivered %d, want %d", n, zsets)
			}
			for i := range zsets {
				key := fmt.Sprintf("z%d", i)
				if rest := e.ix.pending(key); len(rest) != 1 || rest[0].ID != payload.TaskID(key+"-later") {
					t.Errorf("%s after the drain: %v, want only the later entry", key, rest)
				}
			}
		})
	})
	t.Run("a step stuck in an outage", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.fail(func([]kafka.Message) error { return dialError })
			e.put("z", tasks(3, "orders", e.now.UnixMilli()))
			ctx, stop := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, stop)
			e.scan(ctx, scantask.Task{Zset: "z", Until: e.now.UnixMilli()})
			if d := time.Since(e.now) - time.Second; d > e.s.cfg.DrainTimeout {
				t.Errorf("drain took %v, more than DrainTimeout %v", d, e.s.cfg.DrainTimeout)
			}
			if rest := e.ix.pending("z"); len(rest) != 3 {
				t.Errorf("pending = %v, want the 3 unwritten entries", rest)
			}
		})
	})
	t.Run("a write in flight finishes and is removed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.w.delay = 1500 * time.Millisecond // a slow broker
			e.put("z", tasks(3, "orders", e.now.Add(-time.Second).UnixMilli()))
			ctx, stop := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, stop) // in the middle of the write
			e.scan(ctx, scantask.Task{Zset: "z", Until: e.now.Add(time.Hour).UnixMilli()})
			if d := time.Since(e.now) - time.Second; d > e.s.cfg.DrainTimeout {
				t.Errorf("drain took %v, more than DrainTimeout %v", d, e.s.cfg.DrainTimeout)
			}
			if rest := e.ix.pending("z"); len(rest) != 0 {
				t.Errorf("pending = %v, want none: produced entries must be removed", rest)
			}
		})
	})
}

// fakeHold holds back every entry due after from until release.
type fakeHold struct{ from, release int64 }

func (h fakeHold) Cutoff(now int64) int64 {
	if now < h.release {
		return min(now, h.from)
	}
	return now
}

func (fakeHold) Poll() time.Duration { return 200 * time.Millisecond }

// While ingest trails (Hold), an overdue entry waits: a cancel stored
// meanwhile wins, and the rest goes out once the hold ends, not before.
func TestWorkWaitsForHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		release := now.Add(3 * time.Second)
		e := newEnv(t, Config{Hold: fakeHold{from: now.UnixMilli(), release: release.UnixMilli()}})
		var sent sentAt
		e.fail(sent.broker(nil))
		early := task("early", "orders", now.Add(-time.Second).UnixMilli())
		kept := task("kept", "orders", now.Add(500*time.Millisecond).UnixMilli())
		dropped := task("dropped", "orders", now.Add(time.Second).UnixMilli())
		e.put("A", []payload.Task{early, kept, dropped})
		go func() {
			// The cancel, queued behind the stall, is stored at +2s: after
			// its task was due, before the hold ends.
			time.Sleep(2 * time.Second)
			c := dropped
			c.Cancel = true
			if err := e.store.Put(context.Background(), []payload.Task{c}); err != nil {
				t.Error(err)
			}
		}()
		e.scan(context.Background(), scantask.Task{Zset: "A", Until: now.Add(5 * time.Second).UnixMilli()})

		if at, ok := sent.get("early", "orders"); !ok || !at.Equal(now) {
			t.Errorf("early (due before the hold) delivered %v at %v, want at once", ok, at.Sub(now))
		}
		if at, ok := sent.get("kept", "orders"); !ok || at.Before(release) || at.After(release.Add(time.Second)) {
			t.Errorf("kept delivered %v at %v, want within 1s after the hold ends (%v)", ok, at.Sub(now), release.Sub(now))
		}
		if _, ok := sent.get("dropped", "orders"); ok {
			t.Error("dropped delivered: its cancel, stored while the hold lasted, must win")
		}
	})
}

// A group task (scantask.Task.More) scans each of its zsets, reading them
// together and removing what they settled together (one round trip each),
// and finishes its offset only when the last of them is done.
func TestGroupTask(t *testing.T) {
	keys := []string{"q:s:7", "q:s:1.263", "q:s:2.519"}
	t.Run("all due", func(t *testing.T) {
		e := newEnv(t, Config{})
		base := e.now.Add(-time.Second).UnixMilli()
		for _, k := range keys {
			e.put(k, []payload.Task{task(k+"-a", "orders", base), task(k+"-b", "orders", base+1)})
		}
		p := e.scan(context.Background(), scantask.Task{Zset: keys[0], More: keys[1:], Until: e.now.UnixMilli()})
		if n := len(e.byTopic("orders")); n != 6 {
			t.Errorf("delivered %d, want 6", n)
		}
		for _, k := range keys {
			if rest := e.ix.pending(k); len(rest) != 0 {
				t.Errorf("%s after the scan: %v, want empty", k, rest)
			}
		}
		if trips := e.ix.trips; trips != 2 {
			t.Errorf("%d index round trips, want 2 (one read of the three zsets, one remove)", trips)
		}
		if next, ok := p.pending(); !ok || next != 1 {
			t.Errorf("commit point %d, %v; want 1", next, ok)
		}
		if v := value(e.s.m.scanTasks); v != 1 {
			t.Errorf("scan_tasks_total = %v, want 1", v)
		}
	})
	t.Run("one zset still waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, Config{})
			now := e.now.UnixMilli()
			e.put(keys[0], []payload.Task{task("a", "orders", now)})
			e.put(keys[1], []payload.Task{task("b", "orders", now)})
			e.put(keys[2], []payload.Task{task("c", "orders", now), task("d", "orders", now+600_000)})
			ctx, stop := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, stop)
			p := e.scan(ctx, scantask.Task{Zset: keys[0], More: keys[1:], Until: now + 600_000})
			if got, want := names(e.byTopic("orders")), []string{"a", "b", "c"}; !slices.Equal(got, want) {
				t.Errorf("delivered %v, want %v", got, want)
			}
			if _, ok := p.pending(); ok {
				t.Error("the group's offset was committed while one of its zsets waited")
			}
			if rest := e.ix.pending(keys[2]); len(rest) != 1 || rest[0].ID != payload.TaskID("d") {
				t.Errorf("%s after the drain: %v, want only d", keys[2], rest)
			}
		})
	})
}

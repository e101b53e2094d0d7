package scanner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// A task for a topic the brokers do not know is parked off the step: the
// other zsets of its worker are delivered at their exec_at while it waits
// out MaxAttempts alone writes, after which it goes to the failed topic
// (issue 11, item 3).
func TestParkedTopicDoesNotHoldOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Config{Backoff: defaultBackoff})
		var sent sentAt
		e.fail(sent.broker(unknownTopic("typo")))
		now := e.now
		e.put("A", []payload.Task{task("good", "orders", now.UnixMilli()), task("bad", "typo", now.UnixMilli())})
		var later []payload.Task
		for i := range 10 {
			later = append(later, task(fmt.Sprintf("b%d", i), "orders", now.Add(time.Duration(i+1)*time.Second).UnixMilli()))
		}
		e.put("B", later)
		until := now.Add(20 * time.Second).UnixMilli()
		p := e.scan(context.Background(), scantask.Task{Zset: "A", Until: until}, scantask.Task{Zset: "B", Until: until})

		for _, tk := range append(later, task("good", "orders", now.UnixMilli())) {
			at, ok := sent.get(tk.Name, "orders")
			if !ok || !at.Equal(time.UnixMilli(tk.ExecAt)) {
				t.Errorf("%s delivered at %v (%v), want at its exec_at %v", tk.Name, at.Sub(now), ok, time.UnixMilli(tk.ExecAt).Sub(now))
			}
		}
		at, ok := sent.get("bad", topics.Failed)
		if !ok {
			t.Fatal("the typo'd task never reached the failed topic")
		}
		t.Logf("typo'd task refused after %v of alone writes", at.Sub(now))
		var alone int
		for _, c := range e.single.calls {
			if c[0].Topic == "typo" {
				alone++
			}
		}
		if alone != e.s.cfg.MaxAttempts {
			t.Errorf("typo'd task written alone %d times, want MaxAttempts (%d)", alone, e.s.cfg.MaxAttempts)
		}
		if off, ok := p.pending(); !ok || off != 2 {
			t.Errorf("commit point %d, %v; want 2", off, ok)
		}
		if rest := e.ix.pending("A"); len(rest) != 0 {
			t.Errorf("zset A holds %v, want nothing", rest)
		}
	})
}

// A parked entry is skipped by later reads of its zset: a scan task that
// reads the zset again (the next tick's) neither delivers nor parks it a
// second time.
func TestParkedEntryReadOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Config{Backoff: defaultBackoff})
		e.fail(unknownTopic("typo"))
		e.put("A", []payload.Task{task("bad", "typo", e.now.UnixMilli())})
		p := newPartition(0)
		q := make(chan scanTask, 8)
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.s.work(context.Background(), p, q)
		}()
		for i := range 5 { // a scan task a second, as the dispatcher emits them
			p.start(int64(i))
			q <- scanTask{Task: scantask.Task{Zset: "A", Until: time.Now().UnixMilli()}, offset: int64(i)}
			time.Sleep(time.Second)
		}
		close(q)
		<-done
		if got := names(e.byTopic(topics.Failed)); !slices.Equal(got, []string{"bad"}) {
			t.Errorf("failed topic got %v, want bad once", got)
		}
		if n := len(e.w.calls); n != 1 {
			t.Errorf("%d batch writes, want 1: later reads skip the parked entry", n)
		}
		if off, ok := p.pending(); !ok || off != 5 {
			t.Errorf("commit point %d, %v; want 5", off, ok)
		}
	})
}

// defaultBackoff is internal/retry's default: what production runs.
var defaultBackoff = retry.Backoff{Base: retry.DefaultBase, Max: retry.DefaultMax}

// typoLoad is the outcome of runTypoLoad.
type typoLoad struct {
	fed, delivered, refused int
	p99, worst              time.Duration // lateness of the valid tasks
}

// runTypoLoad feeds one worker 800 valid tasks a second over 16 zsets, due
// within a second of being added, plus typos a second for a topic the
// brokers do not know, for a minute of fake time, with the dispatcher's
// one-second tick and lookahead and 2 ms per write. It returns what came
// out of it. Run it inside a synctest bubble.
func runTypoLoad(t *testing.T, typos int) typoLoad {
	e := newEnv(t, Config{Backoff: defaultBackoff})
	var sent sentAt
	e.fail(sent.broker(unknownTopic("typo")))
	e.w.delay, e.single.delay = 2*time.Millisecond, 2*time.Millisecond
	rng := rand.New(rand.NewPCG(1, 2))
	const zsets, feedFor = 16, time.Minute
	start := time.Now()
	var (
		mu    sync.Mutex
		valid []payload.Task
	)
	q := make(chan scanTask, 4096)
	p := newPartition(0)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // ingest
		defer wg.Done()
		for i := 0; time.Since(start) < feedFor; i++ {
			for z := range zsets {
				var ts []payload.Task
				for j := range 5 {
					due := time.Now().Add(time.Duration(rng.Int64N(int64(time.Second)))).UnixMilli()
					ts = append(ts, task(fmt.Sprintf("v-%d-%d-%d", i, z, j), "orders", due))
				}
				if typos > 0 && i%(10/typos) == 0 && z == i%zsets {
					ts = append(ts, task(fmt.Sprintf("typo-%d", i), "typo", time.Now().UnixMilli()))
				}
				mu.Lock()
				for _, tk := range ts {
					if tk.Topic == "orders" {
						valid = append(valid, tk)
					}
				}
				mu.Unlock()
				e.put(fmt.Sprintf("z%d", z), ts)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	go func() { // dispatcher: a scan task for every zset at every tick
		defer wg.Done()
		for off := int64(0); time.Since(start) < feedFor+30*time.Second; {
			until := time.Now().Add(time.Second).UnixMilli()
			for z := range zsets {
				p.start(off)
				q <- scanTask{Task: scantask.Task{Zset: fmt.Sprintf("z%d", z), Until: until}, offset: off}
				off++
			}
			time.Sleep(time.Second)
		}
		stop()
	}()
	e.s.work(ctx, p, q)
	wg.Wait()

	out := typoLoad{fed: len(valid), refused: len(e.byTopic(topics.Failed))}
	var lateness []time.Duration
	for _, tk := range valid {
		at, ok := sent.get(tk.Name, "orders")
		if !ok {
			continue
		}
		out.delivered++
		lateness = append(lateness, at.Sub(time.UnixMilli(tk.ExecAt)))
	}
	slices.Sort(lateness)
	if len(lateness) > 0 {
		out.p99, out.worst = lateness[len(lateness)*99/100], lateness[len(lateness)-1]
	}
	return out
}

// A trickle of tasks for a topic that does not exist lowers neither the
// throughput nor the lateness of valid tasks on the same worker (issue 11,
// item 3). It counts in fake time; the figures are logged.
func TestTypoTopicsDoNotSlowOthers(t *testing.T) {
	var clean, typo typoLoad
	synctest.Test(t, func(t *testing.T) { clean = runTypoLoad(t, 0) })
	synctest.Test(t, func(t *testing.T) { typo = runTypoLoad(t, 2) })
	for _, r := range []struct {
		name string
		typoLoad
	}{{"no typos", clean}, {"2 typos/s", typo}} {
		t.Logf("%s: %d valid tasks fed, %d delivered (%.0f/s over the minute), lateness p99 %v, worst %v; %d refused",
			r.name, r.fed, r.delivered, float64(r.delivered)/60, r.p99, r.worst, r.refused)
		if r.delivered != r.fed {
			t.Errorf("%s: %d of %d valid tasks delivered", r.name, r.delivered, r.fed)
		}
	}
	if typo.refused != 120 {
		t.Errorf("%d typo'd tasks refused, want the 120 fed", typo.refused)
	}
	if typo.worst > clean.worst+100*time.Millisecond {
		t.Errorf("worst lateness %v with typos, %v without", typo.worst, clean.worst)
	}
}

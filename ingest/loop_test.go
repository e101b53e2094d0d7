package ingest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/payload"
)

// after is a valid input due 90 s after its record timestamp, which is now
// (on the caller's clock).
func after(topic string, partition int, offset int64) payload.Message {
	m := msg(partition, offset, payload.HeaderTopic, "biz", payload.HeaderAfter, "90s")
	m.Topic, m.Time = topic, time.Now()
	return m
}

// laneRun is one consume loop under test.
type laneRun struct {
	stop func()      // cancels Run's ctx
	end  func()      // ends the generation
	done chan error  // consume's result
	gen  *fakeGen    // the generation's committer
	r    *fakeReader // the partition's reader
	t    *testing.T
}

// runLane starts the consume loop of partition 0 of delay-input.
func runLane(t *testing.T, f *fixture, edit func(*lane)) *laneRun {
	t.Helper()
	ctx, stop := context.WithCancel(t.Context())
	gctx, end := context.WithCancel(t.Context())
	r := newFakeReader(f.ev)
	lr := &laneRun{stop: stop, end: end, done: make(chan error, 1), gen: &fakeGen{ev: f.ev}, r: r, t: t}
	l := lane{topic: "delay-input", partition: 0, r: r, prog: &progress{}}
	if edit != nil {
		edit(&l)
	}
	go func() { lr.done <- f.in.consume(ctx, gctx, lr.gen, l) }()
	return lr
}

// wait returns consume's result; it fails the test if consume does not
// return within a minute (of virtual time under synctest).
func (lr *laneRun) wait() error {
	lr.t.Helper()
	select {
	case err := <-lr.done:
		return err
	case <-time.After(time.Minute):
		lr.t.Fatal("consume did not return")
		return nil
	}
}

// Five messages in batches of two, each committed after its put and add.
// A batch closes at BatchSize messages, or at BatchBytes of payload
// (large payloads make small batches).
func TestConsumeCommitsAfterStoring(t *testing.T) {
	two := 2 * messageBytes(after("delay-input", 0, 10))
	for name, set := range map[string]func(*Config){
		"BatchSize":  func(c *Config) { c.BatchSize = 2 },
		"BatchBytes": func(c *Config) { c.BatchSize = 100; c.BatchBytes = two },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, func(c *Config) { set(c); c.BatchWait = 30 * time.Millisecond })
				lr := runLane(t, f, nil)
				for i := range int64(5) {
					lr.r.in <- after("delay-input", 0, 10+i)
				}
				synctest.Wait()
				time.Sleep(time.Second)
				synctest.Wait()
				lr.stop()
				if err := lr.wait(); err != nil {
					t.Fatalf("consume: %v", err)
				}
				want := []string{"put 2", "add 2", "commit delay-input/0@12", "put 2", "add 2", "commit delay-input/0@14",
					"put 1", "add 1", "commit delay-input/0@15"}
				if got := f.ev.list(); !slices.Equal(got, want) {
					t.Errorf("events %v, want %v", got, want)
				}
				if lr.r.closed {
					t.Error("consume closed the reader")
				}
			})
		})
	}
}

func TestConsumeMalformedOnlyIsCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		lr := runLane(t, f, nil)
		lr.r.in <- malformed(3)
		synctest.Wait()
		time.Sleep(time.Second)
		lr.stop()
		if err := lr.wait(); err != nil {
			t.Fatal(err)
		}
		if got := f.ev.list(); !slices.Equal(got, []string{"failed 1", "commit delay-input/0@4"}) {
			t.Errorf("events %v", got)
		}
	})
}

func TestConsumeGracefulStopFinishesBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		f.store.block = make(chan struct{})
		lr := runLane(t, f, nil)
		for i := range int64(3) {
			lr.r.in <- after("delay-input", 0, i)
		}
		synctest.Wait() // Put waits
		lr.stop()
		time.Sleep(time.Second) // the stop is under way
		close(f.store.block)
		if err := lr.wait(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		want := []string{"put-wait", "put 3", "add 3", "commit delay-input/0@3"}
		if got := f.ev.list(); !slices.Equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
	})
}

// TestConsumeGenerationEndFinishesBatch: when the generation ends (a
// rebalance), the batch in hand is stored and committed in that generation
// before the lane returns, so the partition's next owner starts after it.
func TestConsumeGenerationEndFinishesBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		f.store.block = make(chan struct{})
		lr := runLane(t, f, nil)
		for i := range int64(3) {
			lr.r.in <- after("delay-input", 0, 40+i)
		}
		synctest.Wait()
		lr.end()
		time.Sleep(time.Second)
		select {
		case err := <-lr.done:
			t.Fatalf("consume returned %v with a batch in hand", err)
		default:
		}
		close(f.store.block)
		if err := lr.wait(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		if got := lr.gen.committed("delay-input", 0); got != 43 {
			t.Errorf("committed %d, want 43", got)
		}
		lr.r.in <- after("delay-input", 0, 43)
		synctest.Wait()
		if _, stored := f.store.snapshot(); len(stored) != 3 {
			t.Errorf("the lane went on after the generation ended: %d tasks stored", len(stored))
		}
	})
}

// TestConsumeDrainTimeoutBoundsAStuckBatch: a batch stalled by an outage
// gets DrainTimeout after the stop, then stays uncommitted.
func TestConsumeDrainTimeoutBoundsAStuckBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(c *Config) { c.DrainTimeout = 3 * time.Second })
		f.in.backoff = retry.Backoff{}
		f.ix.outage = time.Hour
		lr := runLane(t, f, nil)
		lr.r.in <- after("delay-input", 0, 0)
		time.Sleep(time.Minute)
		lr.stop()
		start := time.Now()
		err := lr.wait()
		if err == nil || !strings.Contains(err.Error(), "not committed") || !errors.Is(err, errOutage) {
			t.Errorf("consume = %v, want a not-committed error naming the outage", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("stop took %v, want the drain timeout 3s", d)
		}
		if got := lr.gen.committed("delay-input", 0); got != 0 {
			t.Errorf("committed %d", got)
		}
		if calls, _ := f.w.snapshot(); calls != 0 {
			t.Errorf("failed topic written %d times", calls)
		}
	})
}

// TestConsumeOutageStallsAndResumes: an index outage of five minutes stalls
// the partition (nothing committed, nothing sent to the failed topic) and
// the lane resumes by itself when the index answers again.
func TestConsumeOutageStallsAndResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		f.in.backoff = retry.Backoff{}
		f.ix.outage = 5 * time.Minute
		lr := runLane(t, f, nil)
		for i := range int64(10) {
			lr.r.in <- after("delay-input", 0, i)
		}
		time.Sleep(4 * time.Minute)
		if got := lr.gen.committed("delay-input", 0); got != 0 {
			t.Errorf("committed %d during the outage", got)
		}
		if calls, _ := f.w.snapshot(); calls != 0 {
			t.Errorf("failed topic written %d times during the outage", calls)
		}
		time.Sleep(2 * time.Minute)
		if got := lr.gen.committed("delay-input", 0); got != 10 {
			t.Errorf("committed %d after the outage, want 10", got)
		}
		lr.r.in <- after("delay-input", 0, 10)
		time.Sleep(time.Second)
		if got := lr.gen.committed("delay-input", 0); got != 11 {
			t.Errorf("committed %d after new input, want 11", got)
		}
		if _, entries := f.ix.snapshot(); len(entries) != 11 {
			t.Errorf("%d entries indexed, want 11", len(entries))
		}
		lr.stop()
		if err := lr.wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConsumeFetchOutage: a partition reader that fails (Kafka down) is
// retried until it answers.
func TestConsumeFetchOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		f.in.backoff = retry.Backoff{}
		lr := runLane(t, f, func(l *lane) { l.r.(*fakeReader).errs = 20 })
		lr.r.in <- after("delay-input", 0, 0)
		time.Sleep(2 * time.Minute)
		if got := lr.gen.committed("delay-input", 0); got != 1 {
			t.Errorf("committed %d, want 1", got)
		}
		lr.stop()
		if err := lr.wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConsumeCommitRefusedByEndedGeneration: a generation that is over
// refuses the commit; that is final (no retry on a later generation, which
// could move the offset backwards), and the lane ends.
func TestConsumeCommitRefusedByEndedGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		lr := runLane(t, f, nil)
		lr.gen.end()
		lr.r.in <- after("delay-input", 0, 5)
		if err := lr.wait(); err != nil {
			t.Fatalf("consume = %v, want nil (not a stop)", err)
		}
		if lr.gen.calls != 1 {
			t.Errorf("%d commit calls, want 1", lr.gen.calls)
		}
		if got := counterValue(f.in.m.commitErrors); got != 1 {
			t.Errorf("commit errors = %v, want 1", got)
		}
	})
}

func TestConsumeCommitRetriesTransientErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		lr := runLane(t, f, nil)
		lr.gen.errs = []error{errOutage, kafka.NotCoordinatorForGroup, kafka.RequestTimedOut}
		lr.r.in <- after("delay-input", 0, 5)
		time.Sleep(10 * time.Second)
		if got := lr.gen.committed("delay-input", 0); got != 6 {
			t.Errorf("committed %d, want 6", got)
		}
		lr.stop()
		if err := lr.wait(); err != nil {
			t.Fatal(err)
		}
		if got := counterValue(f.in.m.commitErrors); got != 0 {
			t.Errorf("commit errors = %v", got)
		}
	})
}

func TestConsumeIdleStopsPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		lr := runLane(t, f, nil)
		synctest.Wait()
		start := time.Now()
		lr.stop()
		if err := lr.wait(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("idle lane took %v to stop", d)
		}
		if len(f.ev.list()) != 0 {
			t.Errorf("events %v", f.ev.list())
		}
	})
}

// TestGenerationWaitsForEveryLane: the generation's function returns (and
// so ends the generation and lets the process leave the group) only after
// every lane has committed its batch in hand.
func TestGenerationWaitsForEveryLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		release := make(chan struct{})
		f.store.gate = func(tasks []payload.Task) <-chan struct{} {
			if strings.HasPrefix(tasks[0].Name, "slow") {
				return release
			}
			return nil
		}
		input, slow := newFakeReader(f.ev), newFakeReader(f.ev)
		input.in <- after("delay-input", 0, 0)
		s := msg(1, 0, payload.HeaderTopic, "biz", payload.HeaderAfter, "1m", payload.HeaderID, "slow-0")
		s.Topic, s.Time = "delay-input-slow", time.Now()
		slow.in <- s
		gen := &fakeGen{ev: f.ev}
		lanes := []lane{
			{topic: "delay-input", partition: 0, r: input, prog: &progress{}},
			{topic: "delay-input-slow", partition: 1, r: slow, lim: newLimiter(10, 10), prog: &progress{}},
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- f.in.generation(ctx, t.Context(), gen, lanes) }()
		synctest.Wait()
		cancel()
		time.Sleep(time.Second)
		select {
		case err := <-done:
			t.Fatalf("generation returned %v while the slow lane still works", err)
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if gen.committed("delay-input", 0) != 1 || gen.committed("delay-input-slow", 1) != 1 {
			t.Errorf("commits %v", gen.commits)
		}
		if !input.closed || !slow.closed {
			t.Errorf("readers closed: input %v, slow %v", input.closed, slow.closed)
		}
	})
}

func TestGenerationWithoutLanesWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		gctx, end := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- f.in.generation(t.Context(), gctx, &fakeGen{}, nil) }()
		time.Sleep(time.Hour)
		select {
		case <-done:
			t.Fatal("a generation without partitions returned before it ended")
		default:
		}
		end()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestSlowLanesShareTheRate: two slow partitions of one process together
// stay within SlowRate.
func TestSlowLanesShareTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		lim := newLimiter(100, 100)
		var lanes []lane
		var readers []*fakeReader
		for p := range 2 {
			r := newFakeReader(f.ev)
			for i := range int64(1000) {
				r.in <- after("delay-input-slow", p, i)
			}
			readers = append(readers, r)
			lanes = append(lanes, lane{topic: "delay-input-slow", partition: p, r: r, lim: lim, prog: &progress{}})
		}
		gen := &fakeGen{ev: f.ev}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- f.in.generation(ctx, t.Context(), gen, lanes) }()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		// A burst of 100, then 100/s: about 300 in two seconds.
		got := gen.committed("delay-input-slow", 0) + gen.committed("delay-input-slow", 1)
		if got < 280 || got > 302 {
			t.Errorf("after 2s committed %d, want about 300", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(10, 5)
		start := time.Now()
		for range 15 {
			if err := l.wait(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		// 5 from the full bucket, then 10 at 10/s.
		if d := time.Since(start); d != time.Second {
			t.Errorf("15 tokens took %v, want 1s", d)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if err := l.wait(ctx); err == nil {
			t.Error("wait with an empty bucket and a 50ms deadline succeeded")
		}
		time.Sleep(100 * time.Millisecond)
		if err := l.wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 1200*time.Millisecond {
			t.Errorf("token after refill at %v", d)
		}
		l.refund()
		before := time.Now()
		if err := l.wait(t.Context()); err != nil || time.Since(before) != 0 {
			t.Errorf("wait after refund: %v after %v", err, time.Since(before))
		}
	})
}

package ingest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
)

// after is a valid input due 90 s after its fetch, whatever the clock.
func after(partition int, offset int64) kafka.Message {
	return msg(partition, offset, payload.HeaderTopic, "biz", payload.HeaderAfter, "90s")
}

// runConsume starts the consume loop on r and returns a function that stops
// it and returns its result.
func runConsume(t *testing.T, f *fixture, r *fakeReader, lim *limiter) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.in.consume(ctx, "delay-input", r, lim) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("consume did not return")
			return nil
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestConsumeCommitsAfterStoring(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.BatchSize = 2; c.BatchWait = 30 * time.Millisecond })
	r := newFakeReader(f.ev)
	for i := range int64(5) {
		r.in <- after(0, i)
	}
	stop := runConsume(t, f, r, nil)
	waitFor(t, "commit of offset 4", func() bool { return r.committed()[0] == 5 })
	if err := stop(); err != nil {
		t.Fatalf("consume: %v", err)
	}
	want := []string{"put 2", "add 2", "commit", "put 2", "add 2", "commit", "put 1", "add 1", "commit"}
	if got := f.ev.list(); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if r.closed {
		t.Error("consume closed the reader")
	}
}

func TestConsumeCommitsLastOffsetPerPartition(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.BatchWait = 30 * time.Millisecond })
	r := newFakeReader(f.ev)
	for _, m := range []kafka.Message{after(0, 10), after(1, 3), after(0, 11), malformed(5), after(1, 4)} {
		r.in <- m
	}
	stop := runConsume(t, f, r, nil)
	waitFor(t, "commit", func() bool { return len(f.ev.list()) > 0 && slices.Contains(f.ev.list(), "commit") })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got := r.committed()
	if len(got) != 3 || got[0] != 12 || got[1] != 5 || got[2] != 6 {
		t.Errorf("committed %v, want 0:12 1:5 2:6", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.commits) != 3 {
		t.Errorf("%d messages committed, want one per partition", len(r.commits))
	}
}

func TestConsumeGracefulStopFinishesBatch(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.BatchWait = 10 * time.Millisecond })
	f.store.block = make(chan struct{})
	r := newFakeReader(f.ev)
	for i := range int64(3) {
		r.in <- after(0, i)
	}
	stop := runConsume(t, f, r, nil)
	waitFor(t, "put", func() bool { return slices.Contains(f.ev.list(), "put-wait") })
	go func() {
		time.Sleep(50 * time.Millisecond) // the stop is under way
		close(f.store.block)
	}()
	if err := stop(); err != nil {
		t.Fatalf("consume: %v", err)
	}
	want := []string{"put-wait", "put 3", "add 3", "commit"}
	if got := f.ev.list(); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if got := r.committed()[0]; got != 3 {
		t.Errorf("committed %d, want 3", got)
	}
}

func TestConsumeStopTimeoutBoundsAStuckBatch(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.StopTimeout = 50 * time.Millisecond; c.CallTimeout = time.Hour })
	f.store.block = make(chan struct{}) // never released
	r := newFakeReader(f.ev)
	r.in <- after(0, 0)
	stop := runConsume(t, f, r, nil)
	waitFor(t, "put", func() bool { return slices.Contains(f.ev.list(), "put-wait") })
	start := time.Now()
	err := stop()
	if err == nil || !strings.Contains(err.Error(), "not committed") {
		t.Errorf("consume = %v, want a not-committed error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stop took %v", d)
	}
	if len(r.committed()) != 0 {
		t.Errorf("committed %v", r.committed())
	}
	if r.closed {
		t.Error("consume closed the reader")
	}
}

func TestConsumeRetriesBatchUntilFailedTopicHeals(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.BatchWait = 5 * time.Millisecond })
	f.w.errs = []error{errBoom, errBoom, errBoom, errBoom, errBoom} // more than Retries (3)
	r := newFakeReader(f.ev)
	r.in <- malformed(0)
	r.in <- after(0, 1)
	stop := runConsume(t, f, r, nil)
	waitFor(t, "commit", func() bool { return r.committed()[0] == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	calls, written := f.w.snapshot()
	if calls != 6 || len(written) != 1 {
		t.Errorf("writer calls %d, messages %d; want 6, 1", calls, len(written))
	}
	if puts, _ := f.store.snapshot(); puts != 2 {
		t.Errorf("Put calls %d, want 2 (the batch handled twice)", puts)
	}
}

func TestRunClosesReadersAfterBothLanesCommit(t *testing.T) {
	// Closing a reader leaves the group, ending the generation under the
	// other lane: both final commits must come before either close.
	f := newFixture(t, func(c *Config) { c.BatchWait = 5 * time.Millisecond })
	release := make(chan struct{})
	f.store.gate = func(tasks []payload.Task) <-chan struct{} {
		if strings.HasPrefix(tasks[0].Name, "slow") {
			return release
		}
		return nil
	}
	input, slow := newFakeReader(f.ev), newFakeReader(f.ev)
	input.name, slow.name = "input", "slow"
	input.in <- after(0, 0)
	slow.in <- msg(1, 0, payload.HeaderTopic, "biz", payload.HeaderAfter, "1m", payload.HeaderID, "slow-0")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.in.run(ctx, input, slow) }()
	waitFor(t, "input commit and slow put", func() bool {
		ev := f.ev.list()
		return slices.Contains(ev, "commit input") && slices.Contains(ev, "put-wait")
	})
	cancel()
	time.Sleep(30 * time.Millisecond)
	if slices.ContainsFunc(f.ev.list(), func(e string) bool { return strings.HasPrefix(e, "close") }) {
		t.Fatalf("a reader closed while the slow lane still works: %v", f.ev.list())
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ev := f.ev.list()
	last := slices.Index(ev, "commit slow")
	if last < 0 || !input.closed || !slow.closed {
		t.Fatalf("events %v; closed %v %v", ev, input.closed, slow.closed)
	}
	for _, e := range ev[:last] {
		if strings.HasPrefix(e, "close") {
			t.Errorf("%s before the slow lane's commit: %v", e, ev)
		}
	}
}

func TestConsumeIdleStopsPromptly(t *testing.T) {
	f := newFixture(t, nil)
	r := newFakeReader(f.ev)
	stop := runConsume(t, f, r, nil)
	time.Sleep(20 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(f.ev.list()) != 0 {
		t.Errorf("events %v", f.ev.list())
	}
}

func TestSlowLaneIsRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(c *Config) { c.SlowRate = 100 })
		r := newFakeReader(f.ev)
		for i := range int64(1000) {
			r.in <- after(0, i)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- f.in.consume(ctx, "delay-input-slow", r, newLimiter(100, 100)) }()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		// A burst of 100, then 100/s: about 300 in two seconds.
		if got := r.committed()[0]; got < 280 || got > 301 {
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
		if d := time.Since(start); d < time.Second || d > time.Second+time.Millisecond {
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

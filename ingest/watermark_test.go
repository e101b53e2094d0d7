package ingest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// sink records the watermarks published.
type sink struct {
	mu    sync.Mutex
	marks map[string]int64
	down  bool
}

func (s *sink) SetMarks(_ context.Context, marks map[string]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("redis down")
	}
	if s.marks == nil {
		s.marks = map[string]int64{}
	}
	for f, w := range marks {
		s.marks[f] = w
	}
	return nil
}

func (s *sink) get(field string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.marks[field]
}

// A lane's watermark follows what it stored: it stands still while the
// lane trails the log and catches up when the lane does, on the input
// topic and on the slow one (whose watermarks only the repair reads).
func TestPublishMarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		marks := &sink{}
		f := newFixture(t, func(c *Config) { c.Marks = marks })
		var mu sync.Mutex
		ends := map[string]map[int]int64{"delay-input": {0: 10, 1: 0}, "delay-input-slow": {0: 5}}
		f.in.offsets = func(_ context.Context, topic string, parts []int, kind offsetKind) (map[int]int64, error) {
			mu.Lock()
			defer mu.Unlock()
			out := map[int]int64{}
			for _, p := range parts {
				out[p] = ends[topic][p]
				if kind == logStart {
					out[p] = 0
				}
			}
			return out, nil
		}
		input0, input1, slow := &progress{}, &progress{}, &progress{}
		input0.next.Store(4)  // trails: offsets 4..9 not stored
		input1.next.Store(-2) // nothing committed, the partition is empty
		slow.next.Store(0)    // trails: offsets 0..4 not stored
		lanes := []lane{
			{topic: "delay-input", partition: 0, prog: input0},
			{topic: "delay-input", partition: 1, prog: input1},
			{topic: "delay-input-slow", partition: 0, prog: slow},
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); f.in.publishMarks(ctx, lanes) }()

		start := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		if w := marks.get("delay-input/0"); w != 0 {
			t.Errorf("partition 0 trails: watermark %v, want none", time.UnixMilli(w).Sub(start))
		}
		if w := marks.get("delay-input/1"); w < start.Add(900*time.Millisecond).UnixMilli() {
			t.Errorf("empty partition 1: watermark %v, want about now", time.UnixMilli(w).Sub(start))
		}
		if w := marks.get("delay-input-slow/0"); w != 0 {
			t.Errorf("slow partition 0 trails: watermark %v, want none", time.UnixMilli(w).Sub(start))
		}

		input0.next.Store(10) // stored up to the end sampled at +200ms
		slow.next.Store(5)
		caught := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		if w := marks.get("delay-input/0"); w < caught.UnixMilli() {
			t.Errorf("partition 0 caught up at %v: watermark %v", caught.Sub(start), time.UnixMilli(w).Sub(start))
		}
		if w := marks.get("delay-input-slow/0"); w < caught.UnixMilli() {
			t.Errorf("slow partition 0 caught up at %v: watermark %v", caught.Sub(start), time.UnixMilli(w).Sub(start))
		}

		// Redis down: nothing published, nothing lost once it is back.
		marks.mu.Lock()
		marks.down = true
		marks.mu.Unlock()
		time.Sleep(time.Second)
		marks.mu.Lock()
		marks.down = false
		marks.mu.Unlock()
		back := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		if w := marks.get("delay-input/0"); w < back.UnixMilli() {
			t.Errorf("after the outage: watermark %v, want after %v", time.UnixMilli(w).Sub(start), back.Sub(start))
		}
		cancel()
		<-done
	})
}

// An idle lane whose partition holds an open transaction is not proof that
// everything before now is stored: a cancel written after the transaction
// began waits behind it. Its watermark stands still until the transaction
// ends (here: the broker aborts it; the lane gets nothing, the aborted
// records and the marker are skipped) and then moves on by idleness.
func TestPublishMarksOpenTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		marks := &sink{}
		f := newFixture(t, func(c *Config) { c.Marks = marks })
		var mu sync.Mutex
		end, stable := int64(8), int64(5) // a transaction open from offset 5
		f.in.offsets = func(_ context.Context, topic string, parts []int, kind offsetKind) (map[int]int64, error) {
			mu.Lock()
			defer mu.Unlock()
			out := map[int]int64{}
			for _, p := range parts {
				switch kind {
				case logStart:
					out[p] = 0
				case logEnd:
					out[p] = end
				case stableEnd:
					out[p] = stable
				}
			}
			return out, nil
		}
		prog := &progress{}
		prog.next.Store(5) // stored everything before the transaction
		prog.idle()
		lanes := []lane{{topic: "delay-input", partition: 0, prog: prog}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); f.in.publishMarks(ctx, lanes) }()

		start := time.Now()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if w := marks.get("delay-input/0"); w != 0 {
			t.Errorf("open transaction: watermark %v, want none", time.UnixMilli(w).Sub(start))
		}
		mu.Lock()
		stable = end // aborted by its timeout: records and marker skipped
		mu.Unlock()
		aborted := time.Now()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if w := marks.get("delay-input/0"); w < aborted.UnixMilli() {
			t.Errorf("transaction aborted at %v: watermark %v, want past it", aborted.Sub(start), time.UnixMilli(w).Sub(start))
		}
		cancel()
		<-done
	})
}

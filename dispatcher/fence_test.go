package dispatcher

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/zset"
)

// pausingIndex lists one due group after pausing for pause (the process
// stopped between winning the tick and writing) and records Retire calls.
type pausingIndex struct {
	pause   time.Duration
	retired int
}

func (p *pausingIndex) DueGroups(ctx context.Context, until int64) ([]zset.Group, error) {
	time.Sleep(p.pause)
	return []zset.Group{{Head: "dq:1:0", Due: []string{"dq:1:0"}}}, nil
}

func (p *pausingIndex) Retire(ctx context.Context, before int64) (int, error) {
	p.retired++
	return 0, nil
}

func (p *pausingIndex) Backlog(ctx context.Context) ([]zset.SegmentCount, error) { return nil, nil }

type winningLocker struct{}

func (winningLocker) TryLock(context.Context, string, time.Duration) (bool, error) { return true, nil }

type countingWriter struct {
	mu   sync.Mutex
	msgs int
}

func (w *countingWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs += len(msgs)
	return nil
}

// TestTickFencedAfterItsTurn: a dispatcher that wins a tick and is paused
// before its writes (a long GC, a frozen VM, SIGSTOP) until the next tick
// has begun, when another instance may win and emit, writes no scan task
// and retires nothing for the tick it won; the refusals are counted. A
// pause that ends within the turn changes nothing.
func TestTickFencedAfterItsTurn(t *testing.T) {
	tests := []struct {
		name       string
		pause      time.Duration
		wantResult string
		wantMsgs   int
		wantFenced float64
	}{
		{"no pause", 0, resultWon, 1, 0},
		{"pause within the turn", 900 * time.Millisecond, resultWon, 1, 0},
		{"pause to the next tick", time.Second, resultError, 0, 1},
		{"pause past the lock's expiry", time.Minute, resultError, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ix := &pausingIndex{pause: tt.pause}
				w := &countingWriter{}
				d, err := New(Config{Tick: time.Second, ScanTopic: "scan", BacklogEvery: -1}, ix, winningLocker{}, w)
				if err != nil {
					t.Fatal(err)
				}
				at := d.nextTick(time.Now())
				time.Sleep(time.Until(at)) // the tick's timer fires
				if got := d.tick(context.Background(), at); got != tt.wantResult {
					t.Fatalf("tick = %s, want %s", got, tt.wantResult)
				}
				if w.msgs != tt.wantMsgs {
					t.Fatalf("%d scan tasks written, want %d", w.msgs, tt.wantMsgs)
				}
				if got := counter(t, d.metrics.fenced.WithLabelValues("dispatcher", writeEmit)); got != tt.wantFenced {
					t.Fatalf("fenced emits %v, want %v", got, tt.wantFenced)
				}
				if wantRetired := tt.wantMsgs; ix.retired != wantRetired {
					t.Fatalf("retired %d times, want %d", ix.retired, wantRetired)
				}
			})
		})
	}
}

// TestTickSkippedAfterItsTurn: a dispatcher paused while it waited for a
// tick wakes after the tick's turn and does not ask for its lock (which
// may have expired after a long pause); it counts the skipped emit.
func TestTickSkippedAfterItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ix, w := &pausingIndex{}, &countingWriter{}
		d, err := New(Config{Tick: time.Second, ScanTopic: "scan", BacklogEvery: -1}, ix, winningLocker{}, w)
		if err != nil {
			t.Fatal(err)
		}
		at := d.nextTick(time.Now())
		time.Sleep(time.Until(at.Add(time.Second))) // woken a tick late
		if got := d.tick(context.Background(), at); got != resultError || w.msgs != 0 || ix.retired != 0 {
			t.Fatalf("late tick = %s, %d scan tasks, %d retires; want error, 0, 0", got, w.msgs, ix.retired)
		}
		if got := counter(t, d.metrics.fenced.WithLabelValues("dispatcher", writeEmit)); got != 1 {
			t.Fatalf("fenced emits %v, want 1", got)
		}
	})
}

package retry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestDelay(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	tests := []struct {
		attempt int
		ceil    time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {4, 800 * time.Millisecond}, {5, time.Second}, {50, time.Second}}
	for _, tt := range tests {
		for range 100 {
			d := b.Delay(tt.attempt)
			if d < tt.ceil/2 || d > tt.ceil {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v]", tt.attempt, d, tt.ceil/2, tt.ceil)
			}
		}
	}
	if d := (Backoff{}).Delay(100); d > DefaultMax || d < DefaultMax/2 {
		t.Fatalf("default Delay(100) = %v, want in [%v, %v]", d, DefaultMax/2, DefaultMax)
	}
}

var errDown = errors.New("connection refused")

func TestDoStallsAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		reg := prometheus.NewRegistry()
		s, err := NewStage("ingest", slog.New(slog.NewTextHandler(&logs, nil)), reg)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		start := time.Now()
		err = s.Do(t.Context(), "put", Policy{Backoff: Backoff{Base: time.Second, Max: 2 * time.Second}}, func(context.Context) error {
			calls++
			if time.Since(start) < 30*time.Second {
				return errDown
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Do = %v, want nil once the dependency is back", err)
		}
		if calls < 15 || calls > 31 {
			t.Fatalf("%d calls in 30 s with a 2 s cap", calls)
		}
		if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
			t.Fatalf("%d WARN lines, want 1:\n%s", n, logs.String())
		}
		if n := strings.Count(logs.String(), "stage recovered"); n != 1 {
			t.Fatalf("%d recovery lines, want 1:\n%s", n, logs.String())
		}
		if got := testutil.ToFloat64(s.retries.WithLabelValues("put")); got != float64(calls-1) {
			t.Fatalf("retries = %v, want %d", got, calls-1)
		}
		if got := testutil.ToFloat64(s.seconds); got < 30 || got > 33 {
			t.Fatalf("stall seconds = %v, want about 30", got)
		}
		if got := testutil.ToFloat64(s.stalled); got != 0 {
			t.Fatalf("stalled = %v after recovery", got)
		}
	})
}

func TestDoPermanentAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errBad := errors.New("bad entry")
		calls := 0
		p := Policy{Permanent: func(err error) bool { return errors.Is(err, errBad) }}
		err := (*Stage)(nil).Do(t.Context(), "add", p, func(context.Context) error { calls++; return errBad })
		if !errors.Is(err, errBad) || calls != 1 {
			t.Fatalf("permanent: err %v after %d calls, want errBad after 1", err, calls)
		}

		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err = (*Stage)(nil).Do(ctx, "add", p, func(context.Context) error { return errDown })
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errDown) {
			t.Fatalf("cancelled: err %v, want both the deadline and the last error", err)
		}
	})
}

// TestStageCountsConcurrentCallsAsOneStall: several goroutines failing
// together make one WARN line, and the stall ends with the last of them.
func TestStageCountsConcurrentCallsAsOneStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		s, err := NewStage("scanner", slog.New(slog.NewTextHandler(&logs, nil)), nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := time.Now()
		for i := range 8 {
			wg.Go(func() {
				_ = s.Do(t.Context(), "get", Policy{}, func(context.Context) error {
					if time.Since(start) < time.Duration(10+i)*time.Second {
						return errDown
					}
					return nil
				})
			})
		}
		synctest.Wait()
		if got := testutil.ToFloat64(s.stalled); got != 1 {
			t.Fatalf("stalled = %v while 8 calls fail", got)
		}
		wg.Wait()
		out := logs.String()
		if strings.Count(out, "level=WARN") != 1 || strings.Count(out, "stage recovered") != 1 {
			t.Fatalf("want one WARN and one recovery line:\n%s", out)
		}
		if got := testutil.ToFloat64(s.seconds); got < 17 || got > 17+DefaultMax.Seconds() {
			t.Fatalf("stall seconds = %v, want about 17 (until the last call recovered)", got)
		}
	})
}

// TestDoIdleEndsStall: a fetch that failed and then waits without an error
// (the broker is back, the partition has no new message) ends the stall
// after Policy.Idle and goes on waiting for its message.
func TestDoIdleEndsStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		s, err := NewStage("ingest", slog.New(slog.NewTextHandler(&logs, nil)), nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		message := start.Add(time.Minute) // the next message arrives then
		err = s.Do(t.Context(), "fetch", Policy{Idle: 2 * time.Second}, func(ctx context.Context) error {
			if time.Since(start) < 5*time.Second {
				return errDown
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Until(message)):
				return nil
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != time.Minute {
			t.Fatalf("Do returned after %v, want when the message came (1m)", got)
		}
		out := logs.String()
		if strings.Count(out, "level=WARN") != 1 || strings.Count(out, "stage recovered") != 1 {
			t.Fatalf("want one WARN and one recovery line:\n%s", out)
		}
		if got := testutil.ToFloat64(s.stalled); got != 0 {
			t.Fatalf("stalled = %v after the fetch waited quietly", got)
		}
		if got := testutil.ToFloat64(s.seconds); got < 5 || got > 5+2+DefaultMax.Seconds() {
			t.Fatalf("stall seconds = %v, want the failing 5 s plus at most one idle wait and backoff", got)
		}
	})
}

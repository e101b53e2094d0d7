package ingest

import (
	"context"
	"sync"
	"time"

	"github.com/delayq/delayq/internal/retry"
)

// limiter is a token bucket: rate tokens a second, at most burst saved up.
// It starts full. It is safe for concurrent use: the slow topic's partition
// lanes share one, so SlowRate holds per process. A wait that finds the
// bucket empty reserves the next token (the count goes negative) and sleeps
// until it is due, so waiters are served in turn.
type limiter struct {
	rate  float64 // tokens per second
	burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst int) *limiter {
	b := float64(max(burst, 1))
	return &limiter{rate: rate, burst: b, tokens: b}
}

// wait takes one token, sleeping until it is due or ctx is done. On an
// error it takes nothing.
func (l *limiter) wait(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	l.tokens--
	var d time.Duration
	if l.tokens < 0 {
		d = max(time.Duration(-l.tokens/l.rate*float64(time.Second)), time.Microsecond)
	}
	l.mu.Unlock()
	if d == 0 {
		return nil
	}
	if err := retry.Sleep(ctx, d); err != nil {
		l.refund()
		return err
	}
	return nil
}

// refund gives back a token that wait handed out but was not used.
func (l *limiter) refund() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens = min(l.burst, l.tokens+1)
}

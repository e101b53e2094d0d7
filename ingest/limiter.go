package ingest

import (
	"context"
	"time"
)

// limiter is a token bucket: rate tokens a second, at most burst saved up.
// It starts full. One goroutine uses it; it has no lock.
type limiter struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newLimiter(rate float64, burst int) *limiter {
	b := float64(max(burst, 1))
	return &limiter{rate: rate, burst: b, tokens: b, now: time.Now}
}

// wait takes one token, sleeping until there is one or ctx is done. On
// ctx.Err it takes nothing.
func (l *limiter) wait(ctx context.Context) error {
	for {
		now := l.now()
		if !l.last.IsZero() {
			l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
		}
		l.last = now
		if l.tokens >= 1 {
			l.tokens--
			return nil
		}
		d := time.Duration((1 - l.tokens) / l.rate * float64(time.Second))
		if err := sleep(ctx, max(d, time.Microsecond)); err != nil {
			return err
		}
	}
}

// refund gives back a token that wait handed out but was not used.
func (l *limiter) refund() {
	l.tokens = min(l.burst, l.tokens+1)
}

// sleep waits d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

package scanner

import (
	"sync"
	"time"
)

// limiter allows up to rate events a second and counts the others.
type limiter struct {
	rate int

	mu         sync.Mutex
	second     int64 // unix second of the current window
	n          int   // events allowed in it
	suppressed int   // events refused since the last allowed one
}

func newLimiter(rate int) *limiter { return &limiter{rate: rate} }

// allow reports whether an event at now may be logged and how many were
// refused since the last one that was.
func (l *limiter) allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sec := now.Unix(); sec != l.second {
		l.second, l.n = sec, 0
	}
	if l.n >= l.rate {
		l.suppressed++
		return false, 0
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

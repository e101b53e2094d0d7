package drain

import (
	"context"
	"sync"
	"time"
)

// Context returns a context that keeps parent's values, is not cancelled
// with parent, but ends grace after parent is done (or when the returned
// cancel is called, which also releases its resources).
func Context(parent context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	var (
		mu    sync.Mutex
		timer *time.Timer
	)
	stop := context.AfterFunc(parent, func() {
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(grace, cancel)
	})
	return ctx, func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

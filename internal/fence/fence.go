package fence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrFenced is wrapped by the errors of a fence that refuses a write.
var ErrFenced = errors.New("fence: the work passed to another instance")

// Fence says whether its holder may still write for the work it holds.
type Fence interface {
	// Check returns nil while the holder may write and an error wrapping
	// ErrFenced once it may not. It may wait (Lease), at most until ctx
	// ends.
	Check(ctx context.Context) error
}

type ctxKey struct{}

// With returns a context that carries f: Check(ctx) checks it.
func With(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, ctxKey{}, f)
}

// Check checks the Fence of ctx (With); nil when ctx has none.
func Check(ctx context.Context) error {
	f, _ := ctx.Value(ctxKey{}).(Fence)
	if f == nil {
		return nil
	}
	return f.Check(ctx)
}

// Until is a Fence valid before an instant. Give it a time.Time read from
// time.Now (which carries the monotonic clock) plus the validity, so a
// wall-clock step cannot move it: Until(start.Add(expiry)), with start read
// before the lock was asked for.
type Until time.Time

// Check returns nil before u, ErrFenced from then on.
func (u Until) Check(context.Context) error {
	if late := time.Since(time.Time(u)); late >= 0 {
		return fmt.Errorf("%w: expired %v ago", ErrFenced, late.Round(time.Millisecond))
	}
	return nil
}

// Lease is a Fence its holder renews: valid until the deadline of the
// latest Renew, refused for good after Revoke. A new Lease is lapsed
// until its first Renew. Safe for concurrent use.
type Lease struct {
	mu      sync.Mutex
	until   time.Time
	revoked bool
	changed chan struct{} // closed and replaced by Renew and Revoke
	done    chan struct{} // closed by Revoke
}

// NewLease returns a lapsed Lease.
func NewLease() *Lease {
	return &Lease{changed: make(chan struct{}), done: make(chan struct{})}
}

// Renew makes l valid until until (a time.Time from time.Now plus the
// validity, measured from before the renewal was asked for). A deadline
// earlier than the current one is ignored; a revoked Lease stays revoked.
func (l *Lease) Renew(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.revoked || !until.After(l.until) {
		return
	}
	l.until = until
	close(l.changed)
	l.changed = make(chan struct{})
}

// Revoke refuses every later Check; it is idempotent.
func (l *Lease) Revoke() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.revoked {
		return
	}
	l.revoked = true
	close(l.changed)
	close(l.done)
}

// Done is closed when l is revoked.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Check returns nil while l is valid and ErrFenced once it is revoked;
// while it is lapsed and not revoked it waits for a Renew or a Revoke, or
// returns ctx's error (wrapped with ErrFenced) when ctx ends first.
func (l *Lease) Check(ctx context.Context) error {
	for {
		l.mu.Lock()
		revoked, until, changed := l.revoked, l.until, l.changed
		l.mu.Unlock()
		switch {
		case revoked:
			return fmt.Errorf("%w: lease revoked", ErrFenced)
		case time.Now().Before(until):
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: lease lapsed: %w", ErrFenced, ctx.Err())
		}
	}
}

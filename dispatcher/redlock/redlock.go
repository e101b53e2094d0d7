package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// Locker takes redsync mutexes on one Redis (or one Redis Cluster: a lock
// is one key).
type Locker struct {
	rs *redsync.Redsync
}

// New returns a Locker on client.
func New(client redis.UniversalClient) *Locker {
	return &Locker{rs: redsync.New(goredis.NewPool(client))}
}

// TryLock makes one attempt at the lock name, held for expiry. It reports
// false with a nil error when another holder has it, and an error when
// Redis did not answer.
func (l *Locker) TryLock(ctx context.Context, name string, expiry time.Duration) (bool, error) {
	mu := l.rs.NewMutex(name, redsync.WithTries(1), redsync.WithExpiry(expiry))
	err := mu.TryLockContext(ctx)
	var taken *redsync.ErrTaken
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &taken), errors.Is(err, redsync.ErrFailed):
		return false, nil
	default:
		return false, err
	}
}

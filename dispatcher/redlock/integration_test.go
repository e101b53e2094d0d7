package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/deploy/stacktest"
)

// Two Lockers on one Redis, from two clients, try one name at the same
// moment: exactly one wins, the other is told the lock is taken (false, no
// error), and the lock expires by itself.
func TestRealRedisTwoLockersOneWins(t *testing.T) {
	c1, prefix := stacktest.RedisPrefix(t, "dqtest-redlock")
	c2 := redis.NewClient(&redis.Options{Addr: stacktest.Redis(t)})
	defer c2.Close()
	lockers := []*Locker{New(c1), New(c2)}
	ctx := context.Background()
	const expiry = 3 * time.Second
	for round := range 20 {
		name := fmt.Sprintf("%s:dispatch:%d", prefix, round)
		wins := make([]bool, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		startGate := make(chan struct{})
		for i, l := range lockers {
			wg.Go(func() {
				<-startGate
				wins[i], errs[i] = l.TryLock(ctx, name, expiry)
			})
		}
		close(startGate)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if wins[0] == wins[1] {
			t.Fatalf("round %d: wins %v, want exactly one winner", round, wins)
		}
		if ttl := c1.PTTL(ctx, name).Val(); ttl <= 0 || ttl > expiry {
			t.Fatalf("round %d: lock TTL %v, want in (0, %v]", round, ttl, expiry)
		}
	}
}

// TestRealStackDispatcherEmitsDueZsetsOnly runs a dispatcher with a 1 s
// tick against the real Redis and Kafka and reads the scan topic back: a
// tick emits exactly the zsets that hold due members, keyed by zset.

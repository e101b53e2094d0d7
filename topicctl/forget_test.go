package topicctl

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/payload"
)

// beforeCmd is a go-redis hook that runs at[i] before its client's i-th
// ZCARD, SREM or SADD (0-based: Forget's commands) is sent, and fails
// the command instead of sending it when fail[i].
type beforeCmd struct {
	at   map[int32]func()
	fail map[int32]bool
	n    atomic.Int32
}

func (b *beforeCmd) DialHook(next redis.DialHook) redis.DialHook { return next }

func (b *beforeCmd) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (b *beforeCmd) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		switch cmd.Name() {
		case "zcard", "srem", "sadd":
			i := b.n.Add(1) - 1
			if f := b.at[i]; f != nil {
				f()
			}
			if b.fail[i] {
				cmd.SetErr(errors.New("connection reset (test)"))
				return cmd.Err()
			}
		}
		return next(ctx, cmd)
	}
}

// TestForgetPaused: Forget needs no fence (internal/fence). It writes
// only the registry of held topics, never a held task, and decides from
// what it reads itself, not from what the releaser read before: it drops
// the topic when its held zset is empty (ZCARD, SREM), then counts again
// and registers the topic back if tasks came in meanwhile (ZCARD, SADD).
// The forgetting instance is paused (its next command waits, as under
// SIGSTOP, past its lease) before each of the four while another instance
// holds tasks of the topic, releases them or forgets the topic; then it
// continues. Whenever tasks are held, the topic is registered (the
// releaser will deliver them: none stranded), and the held tasks are
// exactly what the other instance left (the paused one delivered, removed
// or added none: nothing duplicated). The worst it leaves is an empty
// topic registered, which the next Forget drops.
func TestForgetPaused(t *testing.T) {
	const topic = "orders"
	one, two := []payload.Ref{{ID: 1, ExecAt: 100}, {ID: 2, ExecAt: 200}}, []payload.Ref{{ID: 3, ExecAt: 300}}
	hold := func(refs []payload.Ref) func(context.Context, *Store) error {
		return func(ctx context.Context, s *Store) error { return s.Hold(ctx, topic, refs) }
	}
	releaseAndForget := func(ctx context.Context, s *Store) error {
		if err := s.Release(ctx, topic, slices.Concat(one, two)); err != nil {
			return err
		}
		return s.Forget(ctx, topic)
	}
	for _, c := range []struct {
		name    string
		pauseAt int32                               // Forget's command the pause is before
		between func(context.Context, *Store) error // the other instance, before Forget's SREM, unpaused
		during  func(context.Context, *Store) error // the other instance, while Forget is paused
		held    int64
		empty   bool // an empty topic left registered
	}{
		{name: "before the first count, tasks held", pauseAt: 0, during: hold(one), held: 2},
		{name: "before SREM, tasks held", pauseAt: 1, during: hold(one), held: 2},
		{name: "before SREM, tasks held and released", pauseAt: 1, during: func(ctx context.Context, s *Store) error {
			if err := s.Hold(ctx, topic, one); err != nil {
				return err
			}
			return releaseAndForget(ctx, s)
		}},
		{name: "before the second count, tasks held", pauseAt: 2, during: hold(one), held: 2},
		{name: "before SADD, more tasks held", pauseAt: 3, between: hold(one), during: hold(two), held: 3},
		{name: "before SADD, all released and forgotten", pauseAt: 3, between: hold(one), during: releaseAndForget, empty: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			mr := miniredis.RunT(t)
			hook := &beforeCmd{at: map[int32]func(){}}
			paused, other := pair(t, mr, hook)
			// The topic as the releaser finds it: registered, nothing held.
			if err := other.Hold(ctx, topic, one); err != nil {
				t.Fatal(err)
			}
			if err := other.Release(ctx, topic, one); err != nil {
				t.Fatal(err)
			}
			act := func(f func(context.Context, *Store) error) func() {
				return func() {
					if err := f(ctx, other); err != nil {
						t.Error(err)
					}
				}
			}
			if c.between != nil {
				hook.at[1] = act(c.between)
			}
			reached, resume := make(chan struct{}), make(chan struct{})
			prev := hook.at[c.pauseAt]
			hook.at[c.pauseAt] = func() {
				if prev != nil {
					prev()
				}
				close(reached)
				<-resume // SIGCONT
			}
			done := make(chan error, 1)
			go func() { done <- paused.Forget(ctx, topic) }()
			select {
			case <-reached:
			case err := <-done:
				t.Fatalf("Forget returned (%v) before its command %d", err, c.pauseAt)
			case <-time.After(10 * time.Second):
				t.Fatal("Forget never reached its pause")
			}
			act(c.during)()
			close(resume)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			held, registered := state(t, other, topic)
			if held != c.held {
				t.Errorf("%d tasks held after the paused Forget, want %d: it changed what is held", held, c.held)
			}
			if held > 0 && !registered {
				t.Errorf("%d tasks held but the topic is not registered: the releaser would never deliver them", held)
			}
			if held == 0 && registered != c.empty {
				t.Errorf("nothing held, registered %v, want %v", registered, c.empty)
			}
			if registered && held == 0 {
				if err := other.Forget(ctx, topic); err != nil {
					t.Fatal(err)
				}
				if _, registered := state(t, other, topic); registered {
					t.Error("the next Forget left the empty topic registered")
				}
			}
		})
	}
}

// state returns how many tasks of topic are held and whether it is
// registered.
func state(t *testing.T, s *Store, topic string) (int64, bool) {
	t.Helper()
	held, err := s.client.ZCard(context.Background(), s.heldKey(topic)).Result()
	if err != nil {
		t.Fatal(err)
	}
	ts, err := s.HeldTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return held, slices.Contains(ts, topic)
}

// pair returns two stores on mr, as two delayd; the first one's client
// carries hook.
func pair(t *testing.T, mr *miniredis.Miniredis, hook redis.Hook) (*Store, *Store) {
	t.Helper()
	var out [2]*Store
	for i := range out {
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		if i == 0 {
			rdb.AddHook(hook)
		}
		s, err := New(rdb, Config{Prefix: "p", Refresh: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out[0], out[1]
}

// TestForgetRecheckFails: when Forget's second count fails after its
// SREM (a connection reset), it registers the topic back rather than
// leave tasks held that came in between unregistered, and reports the
// error.
func TestForgetRecheckFails(t *testing.T) {
	ctx := context.Background()
	refs := []payload.Ref{{ID: 1, ExecAt: 100}}
	hook := &beforeCmd{at: map[int32]func(){}, fail: map[int32]bool{2: true}}
	s, other := pair(t, miniredis.RunT(t), hook)
	if err := other.Hold(ctx, "orders", refs); err != nil {
		t.Fatal(err)
	}
	if err := other.Release(ctx, "orders", refs); err != nil {
		t.Fatal(err)
	}
	hook.at[1] = func() { // a Hold lands between the first count and the SREM
		if err := other.Hold(ctx, "orders", refs); err != nil {
			t.Error(err)
		}
	}
	if err := s.Forget(ctx, "orders"); err == nil {
		t.Error("Forget hid the failed count")
	}
	if held, registered := state(t, other, "orders"); held != 1 || !registered {
		t.Errorf("after a failed second count: %d held, registered %v; want 1, true", held, registered)
	}
}

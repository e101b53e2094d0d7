package daemon

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/repair"
	"github.com/delayq/delayq/zset"
)

// TestGuardedIndexHold: after a failed index call (Redis away) the op flags
// are not believed for the hold, so a flag the Redis that came back lost
// does not let a submit skip its id row before the loss watcher saw the
// loss; afterwards they are believed again.
func TestGuardedIndexHold(t *testing.T) {
	const hold = 200 * time.Millisecond
	ctx := t.Context()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	ix, err := zset.New(c, zset.Config{Prefix: "g", Segment: time.Minute, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, "g:generation", "id", "gen1").Err(); err != nil {
		t.Fatal(err)
	}
	g := &guardedIndex{ingestIndex: ingestIndex{ix.Writer(), ix.OpFlags()}, gen: repair.NewGeneration(c, "g"), hold: hold}
	flagged := func(want ...bool) {
		t.Helper()
		got, err := g.Flagged(ctx, []uint64{7, 8})
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Flagged(7, 8) = %v, %v; want %v", got, err, want)
		}
	}
	if err := g.FlagOps(ctx, []uint64{7}, time.Hour); err != nil {
		t.Fatal(err)
	}
	flagged(true, false)

	m.Close()
	if err := g.Add(ctx, time.Now(), []zset.Entry{{ID: 9, ExecAt: time.Now().Add(time.Minute).UnixMilli()}}); err == nil {
		t.Fatal("Add with Redis away: no error")
	}
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	for _, k := range m.Keys() { // the flag went with the writes the restart lost
		if !strings.HasSuffix(k, ":generation") {
			m.Del(k)
		}
	}
	flagged(true, true)
	time.Sleep(hold)
	flagged(false, false)
}

// fixedHold is a scanner Hold with a fixed cutoff and poll.
type fixedHold struct {
	cutoff int64
	poll   time.Duration
}

func (h fixedHold) Cutoff(now int64) int64 { return min(now, h.cutoff) }
func (h fixedHold) Poll() time.Duration    { return h.poll }

// TestHoldsTakeTheLowest: the scanner's holds (the ingest watermarks', the
// index repair's) let an entry go only when every one of them does, and
// are asked again at the shortest poll.
func TestHoldsTakeTheLowest(t *testing.T) {
	h := holds{fixedHold{cutoff: 500, poll: time.Second}, fixedHold{cutoff: 0, poll: 200 * time.Millisecond}}
	if got := h.Cutoff(1000); got != 0 {
		t.Errorf("cutoff %d with one hold at 0, want 0", got)
	}
	h[1] = fixedHold{cutoff: 2000, poll: 200 * time.Millisecond}
	if got := h.Cutoff(1000); got != 500 {
		t.Errorf("cutoff %d, want the watermark's 500", got)
	}
	if got := h.Poll(); got != 200*time.Millisecond {
		t.Errorf("poll %v, want the shortest", got)
	}
}

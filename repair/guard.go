package repair

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of a Guard.
const (
	DefaultGuardPoll    = 200 * time.Millisecond
	DefaultGuardMaxHold = 5 * time.Minute
)

// Suspect reports whether the index may have lost data its repair has not
// restored yet, by what the Watcher's check looks at (Watcher.Check): a
// loss recorded and not healed (Lost), a Redis without the generation
// (new, flushed or restarted without its files), or masters that show a
// failover or a restart since the marker was confirmed (lossSince). A
// Redis first seen, or a master added, is not a loss.
func Suspect(m Marker, r Replication) bool {
	return m.Lost != 0 || m.ID == "" || r.lossSince(m.ReplID) != ""
}

// Guard holds deliveries back (it is a scanner.Hold) while the index may
// have lost data and the repair has not run: a Redis restarted on its
// AOF, or a replica promoted, answers with the index it kept, and the
// scanner would deliver the overdue tasks it holds at once; the repair,
// which re-indexes every task whose index write the loss may have taken
// (the tasks recorded since its window's start), would then index them
// again and they would go out twice. Held, they are still in the index
// when the repair adds them again, which adds nothing, and are delivered
// once after it. The same holds for the tasks ingest indexes in the new
// Redis before the loss is detected. A Guard holds from its start and
// after any failed look until a look finds the index whole, so that a
// Redis that comes back is not delivered from before the Guard saw it;
// it stops holding after its max hold (one WARN line), so that a repair
// that cannot finish does not stop deliveries for good.
type Guard struct {
	gen     *Generation
	client  redis.UniversalClient
	poll    time.Duration
	maxHold time.Duration
	log     *slog.Logger
	since   atomic.Int64 // unix ms since when held; 0: not held
	warned  bool
}

// NewGuard returns a Guard of the index under prefix on client that looks
// every poll and holds at most maxHold (zero: the defaults).
func NewGuard(client redis.UniversalClient, prefix string, poll, maxHold time.Duration, log *slog.Logger) *Guard {
	if poll <= 0 {
		poll = DefaultGuardPoll
	}
	if maxHold <= 0 {
		maxHold = DefaultGuardMaxHold
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Guard{gen: NewGeneration(client, prefix), client: client, poll: poll, maxHold: maxHold, log: log}
	g.since.Store(time.Now().UnixMilli())
	return g
}

// Cutoff is the latest exec_at deliverable at now (unix ms): now, or 0
// (nothing) while held.
func (g *Guard) Cutoff(now int64) int64 {
	if s := g.since.Load(); s != 0 && now-s < g.maxHold.Milliseconds() {
		return 0
	}
	return now
}

// Poll is how often the Guard looks.
func (g *Guard) Poll() time.Duration { return g.poll }

// Run looks every Poll until ctx ends.
func (g *Guard) Run(ctx context.Context) {
	t := time.NewTicker(g.poll)
	defer t.Stop()
	for {
		g.look(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// look reads the marker and the masters' ids once and holds or releases.
func (g *Guard) look(ctx context.Context) {
	held := true
	m, err := g.gen.Read(ctx)
	if err == nil {
		var r Replication
		if r, err = ReplID(ctx, g.client); err == nil {
			held = Suspect(m, r)
		}
	}
	now := time.Now().UnixMilli()
	switch since := g.since.Load(); {
	case held && since == 0:
		g.since.Store(now)
		if err == nil {
			g.log.Warn("deliveries held until the index is repaired (redis restarted, failed over or flushed)",
				"lost_at", m.Lost, "cause", m.Cause)
		}
	case held && !g.warned && now-since >= g.maxHold.Milliseconds():
		g.warned = true
		g.log.Warn("index not confirmed whole for the max hold, deliveries no longer wait for its repair", "max_hold", g.maxHold)
	case !held && since != 0:
		g.since.Store(0)
		if g.warned || now-since > 10*g.poll.Milliseconds() {
			g.log.Info("deliveries no longer held for the index repair", "held_for", time.Duration(now-since)*time.Millisecond)
		}
		g.warned = false
	}
}

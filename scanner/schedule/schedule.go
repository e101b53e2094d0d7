package schedule

import "time"

// Entry is a zset member: a task id due at ExecAt (unix ms). It has the
// fields of zset.Entry, which converts to it.
type Entry struct {
	ID     uint64
	ExecAt int64
}

// Hold tells how far deliveries may go (watermark.Follower): a cancel may
// still be on its way through ingest.
type Hold interface {
	// Cutoff is the latest exec_at (unix ms) deliverable at now (unix ms).
	Cutoff(now int64) int64
	// Poll is how soon a held-back entry is looked at again.
	Poll() time.Duration
}

// Config is the scanner's scheduling settings (scanner.Config's).
type Config struct {
	// Prefetch is how long before their exec_at a step reads tasks; it is
	// capped by Coalesce (Lead).
	Prefetch time.Duration
	// Coalesce rounds a wake up to its next multiple (from the epoch), so
	// that a worker's zsets fall due together; 0 or less: no rounding.
	Coalesce time.Duration
	// BatchSize is the most entries one read of a zset returns.
	BatchSize int
	// Hold holds deliveries back; nil: every entry at its exec_at.
	Hold Hold
}

// Lead is how long before its entries are due a step starts: Prefetch, at
// most Coalesce. A step waits for its latest entry, and with wakes
// Coalesce apart no other zset of the worker falls due meanwhile.
func (c Config) Lead() time.Duration {
	return max(min(c.Prefetch, c.Coalesce), 0)
}

// WakeAt is when a worker steps a zset whose next entry is due at execAt
// (unix ms): at execAt, or, with Coalesce, at the next multiple of
// Coalesce, Lead earlier in both cases.
func (c Config) WakeAt(execAt int64) time.Time {
	if co := c.Coalesce.Milliseconds(); co > 0 {
		execAt = (execAt + co - 1) / co * co
	}
	return time.UnixMilli(execAt).Add(-c.Lead())
}

// Cutoff is the latest exec_at deliverable at now (unix ms): now, or less
// while the Hold holds deliveries back.
func (c Config) Cutoff(now int64) int64 {
	if c.Hold == nil {
		return now
	}
	return c.Hold.Cutoff(now)
}

// WakeFor is when a worker steps a zset whose next entry, due at execAt,
// was not taken at now, and whether that step is early for it (it then
// takes the entries due by the wake + Lead): WakeAt, or, when that has
// come and the Hold holds the entry back, now + the Hold's poll.
func (c Config) WakeFor(execAt int64, now time.Time) (time.Time, bool) {
	t := c.WakeAt(execAt)
	if c.Hold != nil && !t.After(now) && c.Cutoff(execAt) < execAt {
		return now.Add(c.Hold.Poll()), false
	}
	return t, true
}

// Cursor is where a zset's current scan task stands between its steps.
type Cursor struct {
	// Upcoming are entries read that were not due at the last look, lowest
	// exec_at first. Steps take from them without reading the zset again
	// until they run out.
	Upcoming []Entry
	// More: the last read was a full batch, or the task waited since it,
	// so the zset may hold entries up to until beyond Upcoming.
	More bool
	// Wake is when the next step is due; Early: Wake is Lead before the
	// next entry's (coalesced) exec_at, so that step takes the entries due
	// by Wake + Lead. A step at once (a new task, more due, a parked wait)
	// takes only those due by then: its wait for later entries would hold
	// up the worker's other zsets.
	Wake  time.Time
	Early bool
}

// NewCursor is the cursor of a scan task that starts at now: it reads the
// zset at once.
func NewCursor(now time.Time) Cursor { return Cursor{More: true, Wake: now} }

// Read reports what a step must do before Next: flush (remove the zset's
// settled entries: a read would return them again) when the entries read
// before ran out, and read the zset again unless its last read found
// nothing more.
func (c *Cursor) Read() (flush, read bool) {
	if len(c.Upcoming) > 0 {
		return false, false
	}
	return true, c.More
}

// Got records a read of the zset that returned es (lowest first) out of
// at most batch; skip names the entries not to take (parked ones).
func (c *Cursor) Got(es []Entry, batch int, skip func(Entry) bool) {
	c.More = len(es) == batch
	out := es[:0:0]
	for _, e := range es {
		if skip == nil || !skip(e) {
			out = append(out, e)
		}
	}
	c.Upcoming = out
}

// Step is what Next decided for a zset.
type Step struct {
	// Due are the entries to load and deliver, lowest first.
	Due []Entry
	// Done: the scan task has nothing up to until left but parked entries
	// (and everything settled was removed at the read before).
	Done bool
	// Parked: nothing to take and nothing upcoming though the zset was
	// read in full: its entries are parked; wake when one settles.
	Parked bool
}

// Next takes from c the entries due at now, or by c.Wake + Lead when the
// step was early (the time that wake was for), within the Hold's cutoff:
// a prefix of c.Upcoming. It sets c.Wake and c.Early for the next step:
// now when it took entries (more may be due, or a read needed), the next
// entry's WakeFor when it took none. The caller delivers what it took no
// earlier than WriteAt. A step costs no Redis call while Upcoming lasts.
func (c Config) Next(cur *Cursor, now time.Time) Step {
	if len(cur.Upcoming) == 0 {
		if !cur.More {
			return Step{Done: true}
		}
		return Step{Parked: true}
	}
	horizon := now
	if slot := cur.Wake.Add(c.Lead()); cur.Early && slot.After(horizon) {
		horizon = slot
	}
	cur.Early = false
	cutoff := c.Cutoff(horizon.UnixMilli())
	n := 0
	for n < len(cur.Upcoming) && cur.Upcoming[n].ExecAt <= cutoff {
		n++
	}
	if n == 0 {
		cur.More = true // waiting: entries may arrive meanwhile
		cur.Wake, cur.Early = c.WakeFor(cur.Upcoming[0].ExecAt, now)
		return Step{}
	}
	due := cur.Upcoming[:n:n]
	cur.Upcoming = cur.Upcoming[n:]
	cur.Wake = now
	return Step{Due: due}
}

// WriteAt is when the deliveries of entries taken together may be
// written (unix ms): at the latest exec_at among them, never before any
// is due.
func WriteAt(due []Entry) int64 {
	var latest int64
	for _, e := range due {
		latest = max(latest, e.ExecAt)
	}
	return latest
}

// Action is what becomes of a loaded delivery.
type Action int

const (
	// Write it now (to its topic, or to the failed topic).
	Write Action = iota
	// HoldBack: hold it in its topic's held set, for the releaser.
	HoldBack
)

// Control is a topic's control as the rules need it (topicctl.Control).
type Control struct {
	Paused bool // hold its due tasks back
	Rate   int  // releases a second across all instances; 0: unlimited
}

// Holds reports whether the topic's due tasks are held back.
func (c Control) Holds() bool { return c.Paused || c.Rate > 0 }

// Route decides a delivery of a topic with control ctl: one already bound
// for the failed topic, or expired, is written; one of a topic that holds
// is held; the others are written.
func Route(ctl Control, failed, expired bool) Action {
	if !failed && !expired && ctl.Holds() {
		return HoldBack
	}
	return Write
}

// Expired reports whether writing at now a task due at execAt (unix ms)
// whose expiry is after (0 or less: none) would be too late.
func Expired(execAt int64, after time.Duration, now time.Time) bool {
	return after > 0 && now.Sub(time.UnixMilli(execAt)) > after
}

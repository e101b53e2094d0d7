package repair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/delayq/delayq/internal/rangescan"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/taskstate"
	"github.com/delayq/delayq/zset"
)

// Defaults of Config.
const (
	DefaultBatchSize = 5000
	DefaultCheckers  = 16
)

// ErrConfig is wrapped by every error Validate reports.
var ErrConfig = errors.New("repair: invalid config")

// Store is what Run reads from the payload store: task rows by due time
// (hbase.Store, payload.Memory: from <= ExecAt < to, in (ExecAt, ID)
// order) and the id rows that say which of them is current.
type Store interface {
	Scan(ctx context.Context, from, to int64, fn func(payload.Task) error) error
	GetIDs(ctx context.Context, ids []uint64) ([]payload.IDState, error)
}

// Index is the Redis index Run checks and fills (zset.Index).
type Index interface {
	Pending(ctx context.Context, e zset.Entry) (bool, error)
	Add(ctx context.Context, now time.Time, entries []zset.Entry) error
}

// Config configures Run. From and To are required; the zero value of every
// other field means its default.
type Config struct {
	// From and To bound the due times, unix ms: From <= ExecAt < To.
	From, To int64
	// DryRun counts what is missing from the index and writes nothing.
	DryRun bool
	// Recorded, when set, keeps only the tasks whose id row was last
	// written by a message recorded in it (d:sr, d:rr). The automatic
	// repair ends it at the loss's detection time plus a margin: ingest
	// indexed later tasks in the new index, and one of them that fell due
	// and was delivered since must not be indexed again. After a failover
	// it also starts it shortly before the loss: only recent writes can
	// have been lost with the old master.
	Recorded Window
	// Settled, when set, says which due tasks the index no longer held
	// shortly before the loss: delivered (see Settled).
	Settled Settled
	// Unchecked adds every pending row not yet due without asking the
	// index first whether it has it: the checks are most of a repair's
	// time, and an Add of a task already there adds nothing. Overdue rows
	// are checked all the same (an Add of one whose segment has ended
	// goes to the segment of now: a second entry). Reindexed then counts
	// every pending row not yet due, indexed or not, and the overdue ones
	// the index lacked. The automatic repair runs so.
	Unchecked bool
	// BatchSize is the most rows checked and indexed together (default 500).
	BatchSize int
	// Checkers is how many index checks run at once (default 16).
	Checkers int
	// Progress, when set, is called on Run's goroutine after every batch.
	Progress func(Stats)
	// Metrics, when set, counts the re-indexed tasks.
	Metrics *Metrics
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Checkers == 0 {
		c.Checkers = DefaultCheckers
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	return errors.Join(rangescan.Validate(ErrConfig, c.From, c.To, c.BatchSize, c.Checkers)...)
}

// Window is a span of record times, unix ms: From <= t <= To; 0 leaves a
// side open.
type Window struct{ From, To int64 }

func (w Window) contains(t int64) bool {
	return (w.From == 0 || t >= w.From) && (w.To == 0 || t <= w.To)
}

// Settled is what a look at the index shortly before a loss showed: every
// task due before Before that ingest had indexed by then (one whose id
// row was recorded before RecordedBefore) was no longer in the index, so
// it had been delivered. Zero: nothing known.
type Settled struct{ Before, RecordedBefore int64 }

// delivered reports whether the task due at execAt, recorded at recorded,
// was delivered before the loss.
func (s Settled) delivered(execAt, recorded int64) bool {
	return execAt < s.Before && recorded != 0 && recorded < s.RecordedBefore
}

// Stats counts what Run did. Scanned = Reindexed + Present + Cancelled +
// Moved + Unrecorded + Delivered, except for the rows of a batch that
// failed.
type Stats struct {
	Scanned   int64 // task rows read in [From, To)
	Reindexed int64 // missing from the index and indexed (a dry run: missing; Unchecked: pending)
	// Overdue is the part of Reindexed already due when indexed: delivered
	// at once, and again if it had been delivered before the loss.
	Overdue   int64
	Present   int64 // already in the index
	Cancelled int64 // skipped: the row or its id is cancelled
	Moved     int64 // skipped: the id's current due time is another row's
	// Unrecorded: skipped, recorded outside Config.Recorded.
	Unrecorded int64
	// Delivered: skipped, delivered before the loss (Config.Settled).
	Delivered int64
	// Position is the due time (unix ms) of the last row scanned.
	Position int64
	// Resume is where a rerun should start: every row due before it has
	// been handled. It is To after a complete run.
	Resume int64
}

// Verdict is what Decide says of one task row.
type Verdict int

// Verdicts.
const (
	Pending    Verdict = iota // current and pending: it belongs in the index
	Cancelled                 // the row or its id is cancelled
	Moved                     // the id's current due time is another row
	Unrecorded                // recorded outside the window
	Delivered                 // delivered before the loss (Settled)
)

// Decide says whether the task row t belongs in the index, given its id
// row st (zero when there is none), the window of record times and what
// was settled before the loss. It is the rule the scanner and
// payload.State follow: the id row's current due
// time (a reschedule's, or a recurring series' next occurrence) names the
// one row of the id that is pending; every other row of it was delivered,
// moved away or superseded. A row without an id row (written before id
// rows existed) is pending unless cancelled.
func Decide(t payload.Task, st taskstate.State, recorded Window, settled Settled) Verdict {
	rec := max(st.SubmitRecorded, st.MoveRecorded)
	// A series' next occurrence is planned by the scanner, not recorded by
	// a message: the record times say nothing of it. Indexing it again is
	// safe whenever it is current: the scanner moves d:a on before it
	// produces an occurrence.
	planned := st.At != 0 && st.At != st.Moving
	switch due := st.Due(); {
	case t.Cancel || st.Cancelled:
		return Cancelled
	case due != 0 && due != t.ExecAt:
		return Moved
	case planned:
		return Pending
	case recorded != (Window{}) && !recorded.contains(rec):
		return Unrecorded
	case settled.delivered(t.ExecAt, rec):
		return Delivered
	}
	return Pending
}

// Run scans [cfg.From, cfg.To) of store and indexes every pending task row
// that ix lacks, batch by batch: an id-row read for the batch (Decide),
// an index check per row (unless Unchecked), then one Add of the missing
// ones. Adding is
// idempotent (zset.Index.Add adds nothing for a task already there), so a
// rerun, or two runs at once, add nothing twice. It returns the Stats and,
// when it stopped early, an error: ctx's (wrapped) or the store's or
// index's.
func Run(ctx context.Context, cfg Config, store Store, ix Index) (Stats, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return Stats{}, err
	}
	r := &run{cfg: cfg, store: store, ix: ix}
	cur, err := rangescan.Pipeline[zset.Entry]{
		Name: "repair", From: cfg.From, To: cfg.To, BatchSize: cfg.BatchSize,
		Keep: r.keep, Flush: r.flush, Progress: r.progress,
	}.Run(ctx, store)
	r.stats.Scanned, r.stats.Position, r.stats.Resume = cur.Scanned, cur.Position, cur.Resume
	return r.stats, err
}

type run struct {
	cfg   Config
	store Store
	ix    Index
	stats Stats
}

// keep counts a cancelled row; the others go on to the batch.
func (r *run) keep(t payload.Task) (zset.Entry, bool) {
	if t.Cancel {
		r.stats.Cancelled++
		return zset.Entry{}, false
	}
	return zset.Entry{ID: t.ID, ExecAt: t.ExecAt}, true
}

// flush decides, checks and indexes a batch of rows not cancelled.
func (r *run) flush(ctx context.Context, batch []zset.Entry) error {
	ids := make([]uint64, len(batch))
	for i, e := range batch {
		ids[i] = e.ID
	}
	states, err := r.store.GetIDs(ctx, ids)
	if err != nil {
		return fmt.Errorf("repair: read %d id rows: %w", len(ids), err)
	}
	var keep []zset.Entry
	var stats Stats
	for i, e := range batch {
		switch Decide(payload.Task{ID: e.ID, ExecAt: e.ExecAt}, states[i], r.cfg.Recorded, r.cfg.Settled) {
		case Cancelled:
			stats.Cancelled++
		case Moved:
			stats.Moved++
		case Unrecorded:
			stats.Unrecorded++
		case Delivered:
			stats.Delivered++
		default:
			keep = append(keep, e)
		}
	}
	now := r.cfg.Now()
	missing, err := r.missing(ctx, keep, now.UnixMilli())
	if err != nil {
		return err
	}
	stats.Present = int64(len(keep) - len(missing))
	stats.Reindexed = int64(len(missing))
	for _, e := range missing {
		if e.ExecAt <= now.UnixMilli() {
			stats.Overdue++
		}
	}
	if !r.cfg.DryRun && len(missing) > 0 {
		if err := r.ix.Add(ctx, now, missing); err != nil {
			return fmt.Errorf("repair: index %d tasks: %w", len(missing), err)
		}
		r.cfg.Metrics.reindexed(stats.Reindexed, stats.Overdue)
	}
	r.stats.Reindexed += stats.Reindexed
	r.stats.Overdue += stats.Overdue
	r.stats.Present += stats.Present
	r.stats.Cancelled += stats.Cancelled
	r.stats.Moved += stats.Moved
	r.stats.Unrecorded += stats.Unrecorded
	r.stats.Delivered += stats.Delivered
	return nil
}

// progress reports the stats with the pipeline's cursor.
func (r *run) progress(c rangescan.Cursor) {
	r.stats.Scanned, r.stats.Position, r.stats.Resume = c.Scanned, c.Position, c.Resume
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.stats)
	}
}

// missing returns the entries the index lacks, in order, Checkers checks
// at a time. Unchecked, it takes every entry due after nowMs as missing
// without asking: an Add of one the index has adds nothing. An overdue one
// is checked all the same: the index adds it to the segment of now when
// its own has ended (zset.Writer.Add), beside the entry it has there, and
// it would be delivered twice.
func (r *run) missing(ctx context.Context, entries []zset.Entry, nowMs int64) ([]zset.Entry, error) {
	there, err := rangescan.Ask(ctx, entries, r.cfg.Checkers, func(ctx context.Context, e zset.Entry) (bool, error) {
		if r.cfg.Unchecked && e.ExecAt > nowMs {
			return false, nil
		}
		ok, err := r.ix.Pending(ctx, e)
		if err != nil {
			return false, fmt.Errorf("repair: check %d@%d: %w", e.ID, e.ExecAt, err)
		}
		return ok, nil
	})
	if err != nil {
		return nil, err
	}
	var out []zset.Entry
	for i, e := range entries {
		if !there[i] {
			out = append(out, e)
		}
	}
	return out, nil
}

package backfill

import (
	"context"
	"errors"
	"fmt"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/rangescan"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
	"github.com/delayq/delayq/zset"
)

// Defaults of Config.
const (
	DefaultBatchSize    = 500
	DefaultCheckers     = 16
	DefaultFlushTimeout = 30 * time.Second
)

// ErrConfig is wrapped by every error Validate reports.
var ErrConfig = errors.New("backfill: invalid config")

// Store scans stored tasks by due time: rows with from <= ExecAt < to in
// (ExecAt, ID) order (hbase.Store, payload.Memory).
type Store interface {
	Scan(ctx context.Context, from, to int64, fn func(payload.Task) error) error
}

// Index tells whether a task is still pending in Redis (zset.Maintenance).
type Index interface {
	Pending(ctx context.Context, e zset.Entry) (bool, error)
}

// Writer writes output messages; each names its topic.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Config configures Run. From and To are required; the zero value of every
// other field means its default.
type Config struct {
	// From and To bound the due times, unix ms: From <= ExecAt < To.
	From, To int64
	// Topic, when set, limits the backfill to tasks for this business topic.
	Topic string
	// DryRun counts what would be delivered and writes nothing.
	DryRun bool
	// SkipPending skips tasks still pending in the Redis index; Run then
	// needs an Index.
	SkipPending bool
	// BatchSize is the most rows checked and written together (default 500).
	BatchSize int
	// Checkers is how many pending checks run at once (default 16).
	Checkers int
	// FlushTimeout bounds writing the batch in hand after ctx ended
	// (default 30 s).
	FlushTimeout time.Duration
	// Progress, when set, is called on Run's goroutine after every batch.
	Progress func(Stats)
	// Now stamps the output messages (default time.Now).
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Checkers == 0 {
		c.Checkers = DefaultCheckers
	}
	if c.FlushTimeout == 0 {
		c.FlushTimeout = DefaultFlushTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	return errors.Join(rangescan.Validate(ErrConfig, c.From, c.To, c.BatchSize, c.Checkers)...)
}

// Stats counts what Run did. Scanned = Delivered + Pending + Cancelled +
// OtherTopic + Invalid, except for the rows of a batch whose write failed.
type Stats struct {
	Scanned    int64 // rows read in [From, To)
	Delivered  int64 // written (a dry run: would be written)
	Pending    int64 // skipped: still pending in Redis (SkipPending)
	Cancelled  int64 // skipped: cancelled
	OtherTopic int64 // skipped: for another topic than Config.Topic
	Invalid    int64 // skipped: a row without a deliverable topic
	// Position is the due time (unix ms) of the last row scanned.
	Position int64
	// Resume is where a rerun should start: every row due before it has
	// been handled. It is To after a complete run.
	Resume int64
}

// Run scans [cfg.From, cfg.To) and delivers the tasks again, batch by
// batch. It returns the Stats and, when it stopped early, an error: ctx's
// (wrapped) when ctx ended, or the store's, index's or writer's.
func Run(ctx context.Context, cfg Config, store Store, ix Index, w Writer) (Stats, error) {
	cfg.setDefaults()
	err := cfg.Validate()
	if cfg.SkipPending && ix == nil {
		err = errors.Join(err, fmt.Errorf("%w: skip pending needs an index", ErrConfig))
	}
	if !cfg.DryRun && w == nil {
		err = errors.Join(err, fmt.Errorf("%w: a writer is needed unless it is a dry run", ErrConfig))
	}
	if err != nil {
		return Stats{}, err
	}
	r := &run{cfg: cfg, ix: ix, w: w}
	cur, err := rangescan.Pipeline[payload.Task]{
		Name: "backfill", From: cfg.From, To: cfg.To, BatchSize: cfg.BatchSize,
		Drain: cfg.FlushTimeout, // SIGINT: the batch in hand is written
		Keep:  r.keep, Flush: r.flush, Progress: r.progress,
	}.Run(ctx, store)
	r.stats.Scanned, r.stats.Position, r.stats.Resume = cur.Scanned, cur.Position, cur.Resume
	return r.stats, err
}

type run struct {
	cfg   Config
	ix    Index
	w     Writer
	stats Stats
}

// keep counts a row skipped for what it is and reports whether it goes on
// to the batch.
func (r *run) keep(t payload.Task) (payload.Task, bool) {
	switch {
	case t.Cancel:
		r.stats.Cancelled++
	case r.cfg.Topic != "" && t.Topic != r.cfg.Topic:
		r.stats.OtherTopic++
	case t.Topic == "" || topics.Internal(t.Topic):
		r.stats.Invalid++
	default:
		return t, true
	}
	return t, false
}

// flush checks and writes a batch.
func (r *run) flush(ctx context.Context, batch []payload.Task) error {
	deliver := batch
	if r.cfg.SkipPending {
		pending, err := rangescan.Ask(ctx, batch, r.cfg.Checkers, func(ctx context.Context, t payload.Task) (bool, error) {
			ok, err := r.ix.Pending(ctx, zset.Entry{ID: t.ID, ExecAt: t.ExecAt})
			if err != nil {
				return false, fmt.Errorf("backfill: pending %s: %w", t.Name, err)
			}
			return ok, nil
		})
		if err != nil {
			return err
		}
		deliver = make([]payload.Task, 0, len(batch))
		for i, t := range batch {
			if pending[i] {
				r.stats.Pending++
			} else {
				deliver = append(deliver, t)
			}
		}
	}
	if !r.cfg.DryRun && len(deliver) > 0 {
		now := r.cfg.Now()
		msgs := make([]kafka.Message, len(deliver))
		for i, t := range deliver {
			msgs[i] = record.FromMessage(payload.Deliverable(t))
			msgs[i].Time = now
		}
		if err := r.w.WriteMessages(ctx, msgs...); err != nil {
			return fmt.Errorf("backfill: write %d messages: %w", len(msgs), err)
		}
	}
	r.stats.Delivered += int64(len(deliver))
	return nil
}

// progress reports the stats with the pipeline's cursor.
func (r *run) progress(c rangescan.Cursor) {
	r.stats.Scanned, r.stats.Position, r.stats.Resume = c.Scanned, c.Position, c.Resume
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.stats)
	}
}

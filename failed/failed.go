package failed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// Defaults of Config.
const (
	DefaultBatchSize   = 500
	DefaultSlack       = time.Minute
	DefaultReadTimeout = 30 * time.Second
)

// ErrConfig is wrapped by every error of Config.Validate.
var ErrConfig = errors.New("failed: config")

// Config says which topics Scan and Replay use. The zero value means the
// defaults.
type Config struct {
	Brokers []string        // Kafka bootstrap addresses; default admin.DefaultBroker
	Auth    *kafkaauth.Auth // secures the connections (TLS, SASL); nil: plaintext
	Failed  string          // the topic read; default topics.Failed
	Input   string          // where replayed messages go; default topics.Input
	// Slow receives the replayed messages ingest had read from it, so a
	// replay keeps the producer's lane; default topics.Slow.
	Slow string
	// BatchSize is the number of messages Replay writes together; default
	// 500.
	BatchSize int
	// Slack is how far past Filter.To a partition is read: record
	// timestamps come from producers' clocks (ingest keeps the input's),
	// so a partition is only nearly in time order. Records stamped in
	// [To, To+Slack) are read but not matched. Default 1 minute.
	Slack time.Duration
	// ReadTimeout bounds the wait for the next record of a partition that
	// has more records before its stop offset; past it, the read fails
	// rather than hang. Default 30 s.
	ReadTimeout time.Duration
}

func (c *Config) setDefaults() {
	if len(c.Brokers) == 0 {
		c.Brokers = []string{admin.DefaultBroker}
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Failed, topics.Failed)
	def(&c.Input, topics.Input)
	def(&c.Slow, topics.Slow)
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Slack == 0 {
		c.Slack = DefaultSlack
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
}

// Validate reports every problem at once; zero fields are valid (they mean
// the defaults).
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	for _, b := range c.Brokers {
		if b == "" {
			bad("empty broker address")
		}
	}
	for _, t := range []struct{ name, topic string }{{"failed", c.Failed}, {"input", c.Input}, {"slow", c.Slow}} {
		if t.topic != "" && !topics.Legal(t.topic) {
			bad("%s topic %q is not a legal topic name", t.name, t.topic)
		}
	}
	c.setDefaults()
	if c.Failed == c.Input || c.Failed == c.Slow || c.Input == c.Slow {
		bad("topics: failed %q, input %q and slow %q must differ", c.Failed, c.Input, c.Slow)
	}
	if c.BatchSize < 0 {
		bad("batch size %d is negative", c.BatchSize)
	}
	if c.Slack < 0 {
		bad("slack %v is negative", c.Slack)
	}
	if c.ReadTimeout < 0 {
		bad("read timeout %v is negative", c.ReadTimeout)
	}
	return errors.Join(errs...)
}

// Filter selects failed messages. From and To are required by Scan and
// Replay.
type Filter struct {
	From, To time.Time // record timestamps, From inclusive, To exclusive
	Reason   string    // a substring of delay-error, ignoring case; "" = any
	Topic    string    // the business topic (delay-topic); "" = any
	// Limit stops after this many matching records; 0 = no limit.
	Limit int
}

func (f Filter) validate() error {
	var errs []error
	if f.From.IsZero() || f.To.IsZero() {
		errs = append(errs, fmt.Errorf("%w: the time range needs both ends", ErrConfig))
	} else if !f.To.After(f.From) {
		errs = append(errs, fmt.Errorf("%w: to %v is not after from %v", ErrConfig, f.To, f.From))
	}
	if f.Limit < 0 {
		errs = append(errs, fmt.Errorf("%w: limit %d is negative", ErrConfig, f.Limit))
	}
	return errors.Join(errs...)
}

// Stats counts a Scan or Replay so far.
type Stats struct {
	Partitions int   // partitions of the failed topic
	Total      int64 // records in the offset ranges to read, known at the start
	Scanned    int64 // records read
	Matched    int64 // records in the filter
	Replayed   int64 // written to an input topic (in a dry run: would be)
	Skipped    int64 // matched but not replayable (contents dropped)
}

// span is the offsets of one partition to read: [start, stop).
type span struct {
	partition   int
	start, stop int64
}

// Scan reads the failed topic's records stamped in [f.From, f.To+Slack)
// and calls fn for each one in f, partition after partition, in offset
// order. It stops at f.Limit matches, at the first error of fn (returned
// as is) or when ctx ends.
func Scan(ctx context.Context, cfg Config, f Filter, fn func(Record) error) (Stats, error) {
	var st Stats
	err := scan(ctx, cfg, f, &st, fn, nil)
	return st, err
}

// scan is Scan counting into st and calling seen after every record read.
func scan(ctx context.Context, cfg Config, f Filter, st *Stats, fn func(Record) error, seen func()) error {
	if err := errors.Join(cfg.Validate(), f.validate()); err != nil {
		return err
	}
	cfg.setDefaults()
	spans, err := locate(ctx, cfg, f)
	if err != nil {
		return err
	}
	st.Partitions = len(spans)
	for _, s := range spans {
		st.Total += s.stop - s.start
	}
	for _, s := range spans {
		if s.stop <= s.start {
			continue
		}
		done, err := read(ctx, cfg, s, func(m kafka.Message) (bool, error) {
			st.Scanned++
			if seen != nil {
				defer seen()
			}
			r := Parse(record.ToMessage(m))
			if !f.Match(r) {
				return false, nil
			}
			st.Matched++
			if err := fn(r); err != nil {
				return true, err
			}
			return f.Limit > 0 && st.Matched >= int64(f.Limit), nil
		})
		if err != nil || done {
			return err
		}
	}
	return nil
}

// locate finds, per partition of the failed topic, the first offset
// stamped at or after f.From and the first one stamped at or after
// f.To+Slack, both capped at the high-water mark at the start.
func locate(ctx context.Context, cfg Config, f Filter) ([]span, error) {
	transport := cfg.Auth.NewTransport()
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: transport, Timeout: 30 * time.Second}

	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{cfg.Failed}})
	if err != nil {
		return nil, fmt.Errorf("failed: metadata of %s: %w", cfg.Failed, cfg.Auth.Explain(err))
	}
	if len(meta.Topics) != 1 {
		return nil, fmt.Errorf("failed: metadata of %s: %d topics in the answer", cfg.Failed, len(meta.Topics))
	}
	if err := meta.Topics[0].Error; err != nil {
		return nil, fmt.Errorf("failed: topic %s: %w", cfg.Failed, err)
	}
	var parts []int
	for _, p := range meta.Topics[0].Partitions {
		parts = append(parts, p.ID)
	}
	slices.Sort(parts)

	// One request per kind of lookup: kafka-go files the answer to a time
	// lookup that found nothing (timestamp -1) as a LastOffset answer.
	lookup := func(what string, req func(p int) kafka.OffsetRequest) (map[int]kafka.PartitionOffsets, error) {
		reqs := make([]kafka.OffsetRequest, len(parts))
		for i, p := range parts {
			reqs[i] = req(p)
		}
		res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{cfg.Failed: reqs}})
		if err != nil {
			return nil, fmt.Errorf("failed: list offsets of %s (%s): %w", cfg.Failed, what, err)
		}
		out := map[int]kafka.PartitionOffsets{}
		for _, po := range res.Topics[cfg.Failed] {
			if po.Error != nil {
				return nil, fmt.Errorf("failed: list offsets of %s/%d (%s): %w", cfg.Failed, po.Partition, what, po.Error)
			}
			out[po.Partition] = po
		}
		for _, p := range parts {
			if _, ok := out[p]; !ok {
				return nil, fmt.Errorf("failed: list offsets of %s/%d (%s): no answer", cfg.Failed, p, what)
			}
		}
		return out, nil
	}
	ends, err := lookup("high-water marks", kafka.LastOffsetOf)
	if err != nil {
		return nil, err
	}
	starts, err := lookup("from", func(p int) kafka.OffsetRequest { return kafka.TimeOffsetOf(p, f.From) })
	if err != nil {
		return nil, err
	}
	stops, err := lookup("to", func(p int) kafka.OffsetRequest { return kafka.TimeOffsetOf(p, f.To.Add(cfg.Slack)) })
	if err != nil {
		return nil, err
	}
	spans := make([]span, len(parts))
	for i, p := range parts {
		hwm := ends[p].LastOffset
		spans[i] = span{partition: p, start: found(starts[p], hwm), stop: found(stops[p], hwm)}
	}
	return spans, nil
}

// found returns the offset a time lookup found, or hwm when it found none
// (no record stamped that late).
func found(po kafka.PartitionOffsets, hwm int64) int64 {
	for off := range po.Offsets {
		if off >= 0 && off < hwm {
			return off
		}
	}
	return hwm
}

// read calls fn for each record of s in order until fn says done or
// returns an error.
func read(ctx context.Context, cfg Config, s span, fn func(kafka.Message) (bool, error)) (bool, error) {
	r, err := consumer.NewPartitionReader(consumer.Partition{
		Brokers: cfg.Brokers, Auth: cfg.Auth, Topic: cfg.Failed, Partition: s.partition, Offset: s.start,
		// 250 ms, below the preset's 500, as the replay has had from the
		// start: it reads records that exist already (up to its stop
		// offset), so a fetch seldom waits on the broker at all.
		MaxWait: 250 * time.Millisecond,
	})
	if err != nil {
		return false, fmt.Errorf("failed: %w", err)
	}
	defer r.Close()
	for {
		rctx, cancel := context.WithTimeout(ctx, cfg.ReadTimeout)
		m, err := r.FetchMessage(rctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return false, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			return false, fmt.Errorf("failed: %s/%d: no record after offset %d within %v; the partition holds offsets up to %d",
				cfg.Failed, s.partition, r.Offset()-1, cfg.ReadTimeout, s.stop-1)
		case err != nil:
			return false, fmt.Errorf("failed: read %s/%d: %w", cfg.Failed, s.partition, err)
		}
		if m.Offset >= s.stop {
			return false, nil
		}
		done, err := fn(m)
		if err != nil || done {
			return done, err
		}
		if m.Offset >= s.stop-1 {
			return false, nil
		}
	}
}

// Writer writes messages; a kafka-go Writer from producer.New does.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Options of Replay.
type Options struct {
	// DryRun writes nothing; Stats.Replayed counts what would be written.
	DryRun bool
	// Each is called for every matching record with the message Replay
	// writes for it (zero when the record is not replayable), before it is
	// written.
	Each func(Record, payload.Message)
	// Progress is called after every record read and when the replay ends.
	Progress func(Stats)
}

// Replay writes the failed messages in f back to the input topics (see
// Record.Replay), in batches of cfg.BatchSize. The messages of one failed
// partition are written in their order. On an error, or when ctx ends, the
// batch in hand is written first (unless writing is what failed) and Stats
// count what was written. A rerun over the same range writes the same
// tasks again: same delay-id and due time, so a task not yet delivered
// stays one task, but one already delivered is delivered again.
func Replay(ctx context.Context, cfg Config, f Filter, w Writer, opt Options) (Stats, error) {
	cfg.setDefaults()
	if w == nil && !opt.DryRun {
		return Stats{}, fmt.Errorf("%w: no writer", ErrConfig)
	}
	var (
		batch    []payload.Message
		stats    Stats
		writeErr error
	)
	progress := func() {
		if opt.Progress != nil {
			opt.Progress(stats)
		}
	}
	flush := func(ctx context.Context) error {
		if len(batch) == 0 {
			return nil
		}
		n, err := write(ctx, w, batch)
		stats.Replayed += int64(n)
		if err != nil {
			writeErr = fmt.Errorf("failed: write %d replayed messages (%d written): %w", len(batch), n, err)
		}
		batch = batch[:0]
		return writeErr
	}
	err := scan(ctx, cfg, f, &stats, func(r Record) error {
		m, err := r.Replay(cfg.Input, cfg.Slow)
		if err != nil {
			stats.Skipped++
			if opt.Each != nil {
				opt.Each(r, payload.Message{})
			}
			return nil
		}
		if opt.Each != nil {
			opt.Each(r, m)
		}
		if opt.DryRun {
			stats.Replayed++
			return nil
		}
		batch = append(batch, m)
		if len(batch) >= cfg.BatchSize {
			return flush(ctx)
		}
		return nil
	}, progress)
	if writeErr == nil {
		// The batch in hand goes out even when the read was interrupted or
		// failed: its records were counted as matched.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if ferr := flush(wctx); ferr != nil {
			err = errors.Join(err, ferr)
		}
		cancel()
	}
	progress()
	return stats, err
}

// write writes msgs and returns how many were written: all, or on an error
// the ones kafka-go reports as written.
func write(ctx context.Context, w Writer, msgs []payload.Message) (int, error) {
	err := w.WriteMessages(ctx, record.FromMessages(msgs)...)
	if err == nil {
		return len(msgs), nil
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) && len(werrs) == len(msgs) {
		n := 0
		for _, e := range werrs {
			if e == nil {
				n++
			}
		}
		return n, err
	}
	return 0, err
}

// Resubmit writes the given records back to the input topics (see
// Record.Replay), in order, in one call: for a caller that picked them from
// a Scan. It returns how many were written; records that are not
// replayable are left out and reported in the error beside any write
// error.
func Resubmit(ctx context.Context, cfg Config, w Writer, recs []Record) (int, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	cfg.setDefaults()
	var (
		msgs []payload.Message
		errs []error
	)
	for _, r := range recs {
		m, err := r.Replay(cfg.Input, cfg.Slow)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Position(), err))
			continue
		}
		msgs = append(msgs, m)
	}
	n := 0
	if len(msgs) > 0 {
		var err error
		n, err = write(ctx, w, msgs)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed: write %d replayed messages (%d written): %w", len(msgs), n, err))
		}
	}
	return n, errors.Join(errs...)
}

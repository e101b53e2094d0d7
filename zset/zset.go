package zset

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

const (
	// MaxArgs caps the arguments of one command or script (ZADD score/member
	// pairs and script (exec_at, id) pairs count two each). Redis's Lua
	// unpack() fails past about 8,000 values; the scripts stay below.
	MaxArgs = 5000
	// MaxPipeline caps the commands sent in one pipeline round trip.
	MaxPipeline = 2000
	// DefaultDueLimit is the Due limit used when limit <= 0.
	DefaultDueLimit = 1000
	// DefaultAddr is the Redis address delayd and delayctl use by default
	// (their --redis flag); the index itself takes a ready client.
	DefaultAddr = "127.0.0.1:6379"
	// DefaultPrefix, DefaultSegment and DefaultShards are the defaults of
	// Config. A segment denser than Shards*Fill tasks grows shard families,
	// so every zset stays a listpack however the tasks are spread; see the
	// package doc, "Shard families" and "Memory".
	DefaultPrefix  = "delayq"
	DefaultSegment = time.Minute
	DefaultShards  = 256
	// MaxID is the largest task id Add accepts, 2^63-1 (payload.MaxID): a
	// member up to it fits a listpack integer.
	MaxID = 1<<63 - 1

	maxExecAt = 1 << 53 // largest exec_at a float64 score holds exactly
)

var (
	// ErrConfig is wrapped by every Config.Validate error.
	ErrConfig = errors.New("zset: invalid config")
	// ErrBadEntry is wrapped by the *BadEntryError that Add returns for
	// entries it refuses: ExecAt not a positive unix millisecond time that a
	// score holds exactly, or ID above MaxID. Such an entry can never be
	// indexed; retrying does not help.
	ErrBadEntry = errors.New("zset: bad entry")
	// ErrBadMember is returned when a zset holds a member in neither member
	// form (something other than delayq wrote to the key).
	ErrBadMember = errors.New("zset: bad member")
)

// BadEntryError lists the entries an Add call refused. Add returns it only
// after it indexed every other entry of the call.
type BadEntryError struct {
	// Indexes are the positions of the refused entries in the slice given
	// to Add, ascending.
	Indexes []int
	// Reasons[i] says why the entry at Indexes[i] was refused.
	Reasons []string
}

// Error lists the first three refused entries with their reasons.
func (e *BadEntryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d refused:", ErrBadEntry, len(e.Indexes))
	for i, idx := range e.Indexes {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(e.Indexes)-i)
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " #%d %s", idx, e.Reasons[i])
	}
	return b.String()
}

// Unwrap returns ErrBadEntry.
func (e *BadEntryError) Unwrap() error { return ErrBadEntry }

// Config configures an Index. The zero value means the defaults.
type Config struct {
	// Prefix of every key (default DefaultPrefix, "delayq"). Keep Redis
	// Cluster hash tags ({...}) out of it: they would put every key in one
	// slot.
	Prefix string
	// Segment is the time span of one zset, a whole number of seconds from
	// 1s to 24h (default DefaultSegment, 1m).
	Segment time.Duration
	// Shards is the number of zsets per segment, 1 to 65536 (default
	// DefaultShards, 256).
	Shards int
	// Fill is how many members a zset takes before it seals and further
	// tasks of its shard go to the next shard family (see the package doc,
	// "Shard families"), 1 to 1<<20 (default DefaultFill, 127). Keep it
	// below Redis's zset-max-listpack-entries so every zset stays a
	// listpack.
	Fill int
	// Registerer receives the store_call_seconds and store_errors_total
	// metrics; nil means they are not registered.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Segment == 0 {
		c.Segment = DefaultSegment
	}
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	if c.Fill == 0 {
		c.Fill = DefaultFill
	}
}

// Validate reports every problem with c at once, each wrapping ErrConfig.
// New calls it after filling in the defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.Segment < time.Second || c.Segment > 24*time.Hour || c.Segment%time.Second != 0 {
		errs = append(errs, fmt.Errorf("%w: segment %v: want whole seconds from 1s to 24h", ErrConfig, c.Segment))
	}
	if c.Shards < 1 || c.Shards > 1<<16 {
		errs = append(errs, fmt.Errorf("%w: shards %d: want 1 to 65536", ErrConfig, c.Shards))
	}
	if c.Fill < 0 || c.Fill > 1<<20 {
		errs = append(errs, fmt.Errorf("%w: fill %d: want 1 to 1048576 (0: default)", ErrConfig, c.Fill))
	}
	return errors.Join(errs...)
}

// Entry is one indexed task. Its member is the decimal ID, or
// "<ID>@<ExecAt>" when the zset already holds the plain ID of another task
// (see the package doc); its score is ExecAt.
type Entry struct {
	ID     uint64
	ExecAt int64 // unix milliseconds
}

// check returns why e cannot be indexed, or "".
func (e Entry) check() string {
	switch {
	case e.ExecAt <= 0:
		return fmt.Sprintf("id %d: exec_at %d is not after the unix epoch", e.ID, e.ExecAt)
	case e.ExecAt > maxExecAt:
		return fmt.Sprintf("id %d: exec_at %d is past 2^53 ms", e.ID, e.ExecAt)
	case e.ID > MaxID:
		return fmt.Sprintf("id %d is above 2^63-1", e.ID)
	}
	return ""
}

// Index is the segmented Redis index: the client, the key layout and the
// metrics, which it shares with the role types it hands out (Writer,
// Reader, Maintenance, OpFlags, Watermarks; see the package doc, "Roles").
// It and its roles are safe for concurrent use.
type Index struct {
	*core
	writer *Writer
}

// core is what every role shares: the client, the key layout (keys.go),
// the pipelined calls (pipeline.go) and the metrics.
type core struct {
	client   redis.UniversalClient
	prefix   string
	registry string
	segMs    int64
	layout   string
	shards   int
	fill     int
	metrics  *metrics
	// absolute: scores are exec_at itself (layout version 1, adopted by
	// CheckLayout from a prefix that records it), not an offset (keys.go).
	absolute atomic.Bool
}

// New returns an Index over client.
func New(client redis.UniversalClient, cfg Config) (*Index, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("zset: nil redis client")
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	layout := "200601021504"
	if cfg.Segment%time.Minute != 0 {
		layout = "20060102150405"
	}
	c := &core{
		client:   client,
		prefix:   cfg.Prefix,
		registry: cfg.Prefix + ":segments",
		segMs:    cfg.Segment.Milliseconds(),
		layout:   layout,
		shards:   cfg.Shards,
		fill:     cfg.Fill,
		metrics:  m,
	}
	return &Index{core: c, writer: &Writer{core: c}}, nil
}

// Writer returns the index's writer. Every call returns the same one: its
// notes of families recorded and zsets sealed serve every Add of the
// process.
func (ix *Index) Writer() *Writer { return ix.writer }

// Reader returns the reader of the due entries.
func (ix *Index) Reader() *Reader { return &Reader{ix.core} }

// Maintenance returns the role that retires segments, counts the backlog
// and inspects entries.
func (ix *Index) Maintenance() *Maintenance { return &Maintenance{ix.core} }

// OpFlags returns the op flags of task ids.
func (ix *Index) OpFlags() *OpFlags { return &OpFlags{ix.core} }

// Watermarks returns the store of ingest watermarks.
func (ix *Index) Watermarks() *Watermarks { return &Watermarks{ix.core} }

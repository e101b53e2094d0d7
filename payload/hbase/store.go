package hbase

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
	"golang.org/x/sync/errgroup"

	"github.com/delayq/delayq/payload"
)

// Config defaults.
const (
	DefaultZK = "127.0.0.1:2181"
	// DefaultZKRoot is the znode parent HBase registers under
	// (zookeeper.znode.parent); clusters such as HDP's use /hbase-unsecure.
	DefaultZKRoot        = "/hbase"
	DefaultTable         = "delayq_tasks"
	DefaultSalts         = 16
	DefaultRetention     = 7 * 24 * time.Hour
	DefaultPutBatch      = 2000
	DefaultFlushInterval = time.Millisecond
	DefaultScanRows      = 32
	DefaultMergedGets    = 2
)

// Table layout: one family, one-letter qualifiers (see the package doc).
// A task is one d:e cell (payload.AppendEnvelope); d:t, d:n, d:k, d:v and
// d:h are the layout before it, still read.
const (
	family      = "d"
	colEnvelope = "e"
	colTopic    = "t"
	colName     = "n"
	colKey      = "k"
	colValue    = "v"
	colHeader   = "h"
	colCancel   = "c"
	colPastDue  = "p" // present when the task was due before it was submitted (payload.Task.PastDue)
)

const (
	// inFlight is how many SendBatch calls one Put or Get keeps in flight.
	inFlight = 4
	// maxChunkBytes cuts a put chunk early when its payloads add up to this,
	// well below HBase's hbase.ipc.max.request.size (256 MiB).
	maxChunkBytes = 8 << 20
	// maxTTL caps the cell TTL: Store expires a cell when timestamp + ttl <
	// now, which overflows (and expires the cell at once) for huge TTLs, and
	// time.Duration itself ends at 292 years.
	maxTTL = 100 * 365 * 24 * time.Hour
	// scanRenew renews idle region scanner leases (HBase's default lease is
	// 60 s): Scan merges all salts, so most of its scanners sit idle while
	// fn works on rows of another salt.
	scanRenew = 20 * time.Second
)

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("hbase: invalid config")

// Config configures a Store. The zero value means the defaults.
type Config struct {
	// ZK is the ZooKeeper quorum of the HBase cluster (default DefaultZK,
	// 127.0.0.1:2181).
	ZK string
	// ZKRoot is HBase's znode parent in ZooKeeper (zookeeper.znode.parent;
	// default DefaultZKRoot, /hbase).
	ZKRoot string
	// Table is the HBase table (default DefaultTable, delayq_tasks), created
	// by CreateTable with the same Salts.
	Table string
	// Salts is the number of salt values and pre-split regions, 1..256
	// (default DefaultSalts, 16). It is part of the stored data: CreateTable
	// records it in the table and refuses another count later.
	Salts int
	// Retention is how long a row outlives its due time (default
	// DefaultRetention, 7 days).
	Retention time.Duration
	// MaxDelay is the longest delay ingest accepts (delayd --max-delay;
	// default payload.DefaultMaxDelay): a cancel by id alone is kept
	// MaxDelay + Retention, as long as the op flag that guards it, since a
	// task of that id may still come due that far ahead.
	MaxDelay time.Duration
	// LegacyCells writes tasks in the multi-cell layout of delayd before
	// one-cell rows (d:t, d:n, d:k, d:v, d:h) instead of one d:e cell, for
	// a rolling upgrade: a delayd of that age reads only the old cells and
	// would take a d:e row for one holding just a cancel marker. Upgrade
	// every instance with it set, then restart them without it. Reads take
	// both layouts either way.
	LegacyCells bool
	// PutBatch is the most rows one SendBatch call carries, for puts and gets
	// (default DefaultPutBatch, 2000). HBase pays per region action of a
	// call (row locks, a WAL append, MVCC), so fewer, larger calls cost it
	// less CPU, up to about this size (measured: docs/performance.md,
	// "Submit: batch sizes").
	PutBatch int
	// ScanRows is how many rows of one salt a Get must ask for to read
	// them with one filtered scan instead of point Gets (default
	// DefaultScanRows, 32; negative: never). See Get.
	ScanRows int
	// MergedGets is how many merged reads of Gets run at once (default
	// DefaultMergedGets, 2; negative: every Get reads alone). A Get that
	// arrives while that many are in flight waits and is read together with
	// the others that wait. See merge.go.
	MergedGets int
	// FlushInterval is how long gohbase waits to fill a region server's RPC
	// queue before it sends a partial batch (default DefaultFlushInterval,
	// 1 ms; negative: send at once).
	FlushInterval time.Duration
	// RPCQueueSize is how many RPCs gohbase queues per region server before
	// it sends them (default PutBatch, so a full chunk goes at once).
	RPCQueueSize int
	// Logger receives the store's and gohbase's logs (nil: discard).
	Logger *slog.Logger
	// Registerer receives the store metrics (nil: not registered).
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.ZK == "" {
		c.ZK = DefaultZK
	}
	if c.ZKRoot == "" {
		c.ZKRoot = DefaultZKRoot
	}
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.Salts == 0 {
		c.Salts = DefaultSalts
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = payload.DefaultMaxDelay
	}
	if c.PutBatch == 0 {
		c.PutBatch = DefaultPutBatch
	}
	if c.ScanRows == 0 {
		c.ScanRows = DefaultScanRows
	}
	if c.MergedGets == 0 {
		c.MergedGets = DefaultMergedGets
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.RPCQueueSize == 0 {
		c.RPCQueueSize = c.PutBatch
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every invalid field at once, each wrapping ErrConfig.
// New calls it after filling in the defaults.
func (c Config) Validate() error {
	var errs []error
	if c.Salts < 1 || c.Salts > payload.MaxSalts {
		errs = append(errs, fmt.Errorf("%w: Salts %d out of range 1..%d", ErrConfig, c.Salts, payload.MaxSalts))
	}
	if c.Retention < 0 || c.Retention > maxTTL {
		errs = append(errs, fmt.Errorf("%w: Retention %v out of range 0..%v", ErrConfig, c.Retention, maxTTL))
	}
	if c.MaxDelay < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxDelay %v is negative", ErrConfig, c.MaxDelay))
	}
	if c.PutBatch < 0 {
		errs = append(errs, fmt.Errorf("%w: PutBatch %d is negative", ErrConfig, c.PutBatch))
	}
	if c.RPCQueueSize < 0 {
		errs = append(errs, fmt.Errorf("%w: RPCQueueSize %d is negative", ErrConfig, c.RPCQueueSize))
	}
	return errors.Join(errs...)
}

// Store is the production payload.Store: one row per task in a salted, pre-split
// table (see the package doc for the layout). It is safe for concurrent use.
type Store struct {
	client    gohbase.Client
	table     []byte
	salts     int
	retention time.Duration
	maxDelay  time.Duration
	legacy    bool // Config.LegacyCells
	batch     int
	scanRows  int     // Config.ScanRows; negative: never
	merge     *merger // nil: Config.MergedGets negative
	log       *slog.Logger
	metrics   *metrics
}

var _ payload.Store = (*Store)(nil)

// New returns a store on cfg.Table. It does not connect: gohbase finds
// the regions on the first call, so a call's ctx bounds that wait.
func New(cfg Config) (*Store, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "payload", "table", cfg.Table)
	client := gohbase.NewClient(cfg.ZK,
		gohbase.ZookeeperRoot(cfg.ZKRoot),
		gohbase.FlushInterval(max(cfg.FlushInterval, 0)),
		gohbase.RpcQueueSize(cfg.RPCQueueSize),
		gohbase.Logger(slog.New(quietHandler{cfg.Logger.Handler()}).With("component", "gohbase")),
	)
	h := &Store{
		client:    client,
		table:     []byte(cfg.Table),
		salts:     cfg.Salts,
		retention: cfg.Retention,
		maxDelay:  cfg.MaxDelay,
		legacy:    cfg.LegacyCells,
		batch:     cfg.PutBatch,
		scanRows:  cfg.ScanRows,
		log:       log,
		metrics:   m,
	}
	if cfg.MergedGets > 0 {
		h.merge = newMerger(func(ctx context.Context, refs []payload.Ref) (out []*payload.Task, errs []error, err error) {
			defer h.observe("read", time.Now(), &err)
			return h.read(ctx, refs)
		}, cfg.MergedGets)
	}
	return h, nil
}

// Close ends the merged reads in flight and waits for their goroutines,
// then closes the connections to HBase. It is idempotent; calls after it
// fail.
func (h *Store) Close() {
	if h.merge != nil {
		h.merge.close()
	}
	h.client.Close()
}

// Put writes tasks in chunks of PutBatch rows (fewer when their payloads add
// up to 8 MiB), a few chunks in flight at once. Every cell gets the TTL
// max(ExecAt − now, 0) + Retention. On error some rows may be written;
// putting them again is harmless.
func (h *Store) Put(ctx context.Context, tasks []payload.Task) (err error) {
	if len(tasks) == 0 {
		return nil
	}
	defer h.observe("put", time.Now(), &err)

	now := time.Now().UnixMilli()
	var (
		chunks [][]hrpc.Call
		chunk  []hrpc.Call
		size   int
	)
	for i := range tasks {
		put, n, err := h.mutation(ctx, &tasks[i], now)
		if err != nil {
			return err
		}
		if len(chunk) == h.batch || (len(chunk) > 0 && size+n > maxChunkBytes) {
			chunks = append(chunks, chunk)
			chunk, size = nil, 0
		}
		chunk = append(chunk, put)
		size += n
	}
	chunks = append(chunks, chunk)

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for _, c := range chunks {
		g.Go(func() error {
			_, err := h.send(gctx, c)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("hbase: put %d tasks: %w", len(tasks), err)
	}
	return nil
}

// mutation builds the put of one task and returns its payload size.
func (h *Store) mutation(ctx context.Context, t *payload.Task, now int64) (*hrpc.Mutate, int, error) {
	if t.ExecAt < 0 {
		return nil, 0, fmt.Errorf("hbase: task %q: negative exec_at %d", t.Name, t.ExecAt)
	}
	var cols map[string][]byte
	switch {
	case t.Cancel:
		cols = map[string][]byte{colCancel: []byte(t.Name)}
	case h.legacy:
		cols = legacyCells(t)
	default:
		cols = map[string][]byte{colEnvelope: payload.EncodeEnvelope(t)}
	}
	if t.PastDue && !t.Cancel {
		cols[colPastDue] = []byte{1}
	}
	size := payload.RowKeyLen
	for _, v := range cols {
		size += len(v)
	}
	ttl := h.retention + time.Duration(min(max(t.ExecAt-now, 0), maxTTL.Milliseconds()))*time.Millisecond
	ttl = min(ttl, maxTTL)
	put, err := hrpc.NewPut(ctx, h.table, payload.RowKey(h.salts, t.Ref()),
		map[string]map[string][]byte{family: cols}, hrpc.TTL(ttl))
	if err != nil {
		return nil, 0, fmt.Errorf("hbase: put %q: %w", t.Name, err)
	}
	return put, size, nil
}

// legacyCells are the cells of t in the multi-cell layout (LegacyCells).
func legacyCells(t *payload.Task) map[string][]byte {
	cols := map[string][]byte{colTopic: []byte(t.Topic), colName: []byte(t.Name)}
	if t.Key != nil {
		cols[colKey] = t.Key
	}
	if t.Value != nil {
		cols[colValue] = t.Value
	}
	if len(t.Headers) > 0 {
		cols[colHeader] = payload.EncodeHeaders(t.Headers)
	}
	return cols
}

// send runs one SendBatch call and turns its per-call errors into one.
func (h *Store) send(ctx context.Context, calls []hrpc.Call) ([]hrpc.RPCResult, error) {
	res, ok := h.client.SendBatch(ctx, calls)
	if ok {
		return res, nil
	}
	var (
		failed int
		first  error
	)
	for _, r := range res {
		if r.Error == nil {
			continue
		}
		failed++
		if first == nil || errors.Is(first, gohbase.NotExecutedError) {
			first = r.Error
		}
	}
	if first == nil { // not expected: SendBatch said not ok
		first = errors.New("batch failed")
	}
	return res, fmt.Errorf("%d of %d calls failed: %w", failed, len(calls), shortError{first})
}

// Scan calls fn for each row with from <= ExecAt < to, in (ExecAt, ID)
// order: it scans every salt's range [s|from, s|to) and merges them.
func (h *Store) Scan(ctx context.Context, from, to int64, fn func(payload.Task) error) error {
	return h.ScanFrom(ctx, payload.Ref{ExecAt: from}, to, fn)
}

// ScanFrom is Scan starting at the row from (included) instead of at a
// time: every salt's range [s|from.ExecAt|from.ID, s|to), merged. A page
// of a listing resumes there without reading the rows before it again.
func (h *Store) ScanFrom(ctx context.Context, from payload.Ref, to int64, fn func(payload.Task) error) (err error) {
	if from.ExecAt < 0 {
		from = payload.Ref{}
	}
	if to <= from.ExecAt {
		return nil
	}
	defer h.observe("scan", time.Now(), &err)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cursors := make(cursorHeap, 0, h.salts)
	defer func() {
		for _, c := range cursors {
			c.sc.Close()
		}
	}()
	for s := range h.salts {
		start, stop := payload.ScanRange(byte(s), from.ExecAt, to)
		binary.BigEndian.PutUint64(start[9:], from.ID)
		scan, err := hrpc.NewScanRange(ctx, h.table, start, stop, hrpc.RenewInterval(scanRenew))
		if err != nil {
			return fmt.Errorf("hbase: scan: %w", err)
		}
		c := &cursor{sc: h.client.Scan(scan)}
		if err := c.next(); err != nil {
			c.sc.Close()
			if err == io.EOF {
				continue
			}
			return fmt.Errorf("hbase: scan salt %d: %w", s, shortError{err})
		}
		cursors = append(cursors, c)
	}
	heap.Init(&cursors)
	for len(cursors) > 0 {
		c := cursors[0]
		t, err := c.task()
		if err != nil {
			return fmt.Errorf("hbase: scan: %w", err)
		}
		if err := fn(*t); err != nil {
			return err
		}
		switch err := c.next(); err {
		case nil:
			heap.Fix(&cursors, 0)
		case io.EOF:
			c.sc.Close()
			heap.Pop(&cursors)
		default:
			return fmt.Errorf("hbase: scan: %w", shortError{err})
		}
	}
	return nil
}

// cursor is one salt's scanner and its current row.
type cursor struct {
	sc  hrpc.Scanner
	row *hrpc.Result
}

func (c *cursor) next() error {
	row, err := c.sc.Next()
	if err != nil {
		return err
	}
	if len(row.Cells) == 0 {
		return errors.New("empty row from scanner")
	}
	c.row = row
	return nil
}

func (c *cursor) key() []byte { return c.row.Cells[0].Row }

func (c *cursor) task() (*payload.Task, error) {
	ref, err := payload.ParseRowKey(c.key())
	if err != nil {
		return nil, err
	}
	return rowTask(ref, c.row.Cells)
}

// cursorHeap orders cursors by their current row without the salt, that is
// by (exec_at, id).
type cursorHeap []*cursor

func (q cursorHeap) Len() int           { return len(q) }
func (q cursorHeap) Less(i, j int) bool { return bytes.Compare(q[i].key()[1:], q[j].key()[1:]) < 0 }
func (q cursorHeap) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *cursorHeap) Push(x any)        { *q = append(*q, x.(*cursor)) }
func (q *cursorHeap) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}

// rowTask turns the cells of one row into a payload.Task. The d:e envelope
// wins over cells of the older layout (d:t, d:n, d:k, d:v, d:h) in the same
// row; d:c marks the task cancelled in either layout.
func rowTask(ref payload.Ref, cells []*hrpc.Cell) (*payload.Task, error) {
	t := &payload.Task{ID: ref.ID, ExecAt: ref.ExecAt}
	var (
		envelope   []byte
		hasName    bool
		cancelName string
	)
	for _, c := range cells {
		if string(c.Family) != family {
			continue
		}
		v := c.Value
		if v == nil {
			v = []byte{} // a present column is never nil
		}
		switch string(c.Qualifier) {
		case colEnvelope:
			envelope = v
		case colTopic:
			t.Topic = string(v)
		case colName:
			t.Name, hasName = string(v), true
		case colKey:
			t.Key = v
		case colValue:
			t.Value = v
		case colHeader:
			hs, err := payload.DecodeHeaders(v)
			if err != nil {
				return nil, fmt.Errorf("row %d/%d: headers: %w", ref.ExecAt, ref.ID, err)
			}
			t.Headers = hs
		case colCancel:
			t.Cancel, cancelName = true, string(v)
		case colPastDue:
			t.PastDue = true
		}
	}
	if envelope != nil {
		if err := payload.DecodeEnvelope(envelope, t); err != nil {
			return nil, fmt.Errorf("row %d/%d: %w", ref.ExecAt, ref.ID, err)
		}
		hasName = true
	}
	if !hasName {
		t.Name = cancelName
	}
	return t, nil
}

func (h *Store) observe(op string, start time.Time, err *error) {
	h.metrics.callSeconds.WithLabelValues("hbase", op).Observe(time.Since(start).Seconds())
	if *err != nil {
		h.metrics.errors.WithLabelValues("hbase", op).Inc()
		h.log.Debug("hbase call failed", "op", op, "err", *err)
	}
}

// shortError keeps the first line of a gohbase error, which otherwise
// carries the whole Java stack trace; errors.Is and As still see the
// original.
type shortError struct{ err error }

func (e shortError) Error() string {
	s := e.err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSuffix(s[:i], ":")
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func (e shortError) Unwrap() error { return e.err }

package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

var (
	errBoom   = errors.New("boom")
	errOutage = errors.New("connection refused")
)

// events records the order of calls across fakes.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(s string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.log = append(e.log, s)
	e.mu.Unlock()
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

// script decides which calls of a fake fail.
type script struct {
	errs []error // errors of the first calls, in order; nil past the end
	// outage, when set, makes every call fail with errOutage from the first
	// call until outage has passed (on the clock of the caller: virtual
	// time under testing/synctest).
	outage time.Duration
	until  time.Time
}

// err returns the scripted error of call number call (from 0).
func (s *script) err(call int) error {
	if s.outage > 0 {
		if s.until.IsZero() {
			s.until = time.Now().Add(s.outage)
		}
		if time.Now().Before(s.until) {
			return errOutage
		}
	}
	if call < len(s.errs) {
		return s.errs[call]
	}
	return nil
}

type fakeStore struct {
	script
	// refuse, when set, makes Put fail for good (payload.ErrContract) for a
	// whole call that holds a task it returns true for, as a store's
	// batch-level error does.
	refuse func(payload.Task) bool
	ev     *events
	block  chan struct{} // when set, Put waits for it to close
	// gate, when set, gives a channel that Put waits on for these tasks (nil: none).
	gate  func([]payload.Task) <-chan struct{}
	mu    sync.Mutex
	calls int
	puts  map[string]int // successful puts by task name
	tasks []payload.Task // of successful calls
	ids   map[uint64]payload.IDState
}

func (f *fakeStore) Put(ctx context.Context, tasks []payload.Task) error {
	var block <-chan struct{} = f.block
	if f.gate != nil {
		block = f.gate(tasks)
	}
	if block != nil {
		f.ev.add("put-wait")
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.err(f.calls)
	f.calls++
	if err != nil {
		return err
	}
	if f.refuse != nil {
		for _, t := range tasks {
			if f.refuse(t) {
				return fmt.Errorf("put %d tasks: %w: row of %q too large", len(tasks), payload.ErrContract, t.Name)
			}
		}
	}
	f.tasks = append(f.tasks, tasks...)
	if f.puts == nil {
		f.puts = map[string]int{}
	}
	for _, t := range tasks {
		f.puts[t.Name]++
	}
	f.ev.add("put " + strconv.Itoa(len(tasks)))
	return nil
}

// Get finds no row: the fake keeps none to move.
func (f *fakeStore) Get(_ context.Context, refs []payload.Ref) ([]*payload.Task, error) {
	return make([]*payload.Task, len(refs)), nil
}

// PutIDs and GetIDs keep id rows as payload.Memory does.
func (f *fakeStore) PutIDs(_ context.Context, writes []payload.IDWrite) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = map[uint64]payload.IDState{}
	}
	for _, w := range writes {
		f.ids[w.ID] = f.ids[w.ID].Apply(w)
	}
	return nil
}

func (f *fakeStore) GetIDs(_ context.Context, ids []uint64) ([]payload.IDState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]payload.IDState, len(ids))
	for i, id := range ids {
		out[i] = f.ids[id]
	}
	return out, nil
}

func (f *fakeStore) snapshot() (int, []payload.Task) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, slices.Clone(f.tasks)
}

type fakeIndex struct {
	script
	// refuse, when set, makes Add fail for good (zset.ErrBadEntry) for a
	// whole call that holds an entry it returns true for, as zset.Writer does.
	refuse  func(zset.Entry) bool
	ev      *events
	mu      sync.Mutex
	calls   int
	entries []zset.Entry
	forgot  []zset.Entry // every entry Forget was given
}

func (f *fakeIndex) Add(ctx context.Context, now time.Time, entries []zset.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.err(f.calls)
	f.calls++
	if err != nil {
		return err
	}
	if f.refuse != nil {
		for _, e := range entries {
			if f.refuse(e) {
				return fmt.Errorf("%w: id %d exec_at %d", zset.ErrBadEntry, e.ID, e.ExecAt)
			}
		}
	}
	f.entries = append(f.entries, entries...)
	f.ev.add("add " + strconv.Itoa(len(entries)))
	return nil
}

// Forget removes every copy of the entries, as zset.Writer does wherever
// Add put them, and counts the entries it was given.
func (f *fakeIndex) Forget(ctx context.Context, _ time.Time, entries []zset.Entry) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	gone := make(map[zset.Entry]bool, len(entries))
	for _, e := range entries {
		gone[e] = true
	}
	n := len(f.entries)
	f.entries = slices.DeleteFunc(f.entries, func(e zset.Entry) bool { return gone[e] })
	f.forgot = append(f.forgot, entries...)
	return int64(n - len(f.entries)), nil
}

// FlagOps keeps no flags, and Flagged says every id is flagged, as an
// index without flags must: every submit reads its id row back.
func (f *fakeIndex) FlagOps(context.Context, []uint64, time.Duration) error { return nil }

func (f *fakeIndex) Flagged(_ context.Context, ids []uint64) ([]bool, error) {
	out := make([]bool, len(ids))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

func (f *fakeIndex) snapshot() (int, []zset.Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, slices.Clone(f.entries)
}

// fakeWriter fails whole calls by script, or single messages by fail.
type fakeWriter struct {
	script
	fail  func(m payload.Message, call int) error // per-message failure, nil = none
	limit int                                     // > 0: messages with more value bytes are refused as too large
	ev    *events
	mu    sync.Mutex
	calls int
	msgs  []payload.Message // as delayq reads them (record.ToMessage)
}

func (f *fakeWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	call := f.calls
	f.calls++
	if err := f.err(call); err != nil {
		return err
	}
	if f.limit > 0 {
		for i, m := range msgs {
			if len(m.Value) > f.limit {
				rest := append(slices.Clone(msgs[:i]), msgs[i+1:]...)
				return kafka.MessageTooLargeError{Message: m, Remaining: rest}
			}
		}
	}
	var werrs kafka.WriteErrors
	if f.fail != nil {
		werrs = make(kafka.WriteErrors, len(msgs))
		failed := false
		for i, m := range msgs {
			if werrs[i] = f.fail(record.ToMessage(m), call); werrs[i] != nil {
				failed = true
			}
		}
		if !failed {
			werrs = nil
		}
	}
	for i, m := range msgs {
		if werrs == nil || werrs[i] == nil {
			f.msgs = append(f.msgs, record.ToMessage(m))
		}
	}
	f.ev.add("failed " + strconv.Itoa(len(msgs)))
	if werrs != nil {
		return werrs
	}
	return nil
}

func (f *fakeWriter) snapshot() (int, []payload.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, slices.Clone(f.msgs)
}

// fakeReader is one partition's reader: it serves messages from a channel.
type fakeReader struct {
	name   string // when set, events read "close <name>"
	ev     *events
	in     chan payload.Message // served as kafka-go's (record.FromMessage)
	mu     sync.Mutex
	errs   int // FetchMessage fails this many times first (a Kafka outage)
	closed bool
}

func newFakeReader(ev *events) *fakeReader {
	return &fakeReader{ev: ev, in: make(chan payload.Message, 10000)}
}

func (r *fakeReader) FetchMessage(ctx context.Context) (kafka.Message, error) {
	r.mu.Lock()
	if r.errs > 0 {
		r.errs--
		r.mu.Unlock()
		return kafka.Message{}, errOutage
	}
	r.mu.Unlock()
	select {
	case <-ctx.Done():
		return kafka.Message{}, ctx.Err()
	case m := <-r.in:
		return record.FromMessage(m), nil
	}
}

func (r *fakeReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.ev.add(strings.TrimSpace("close " + r.name))
	return nil
}

// fakeGen is a generation's committer. It records the commits, can fail the
// first ones (script) and refuses every commit once over is set, as the
// coordinator does once the generation has ended.
type fakeGen struct {
	script
	ev      *events
	mu      sync.Mutex
	calls   int
	over    bool
	commits map[string]map[int]int64 // the last committed offset per topic and partition
}

func (g *fakeGen) CommitOffsets(offsets map[string]map[int]int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	call := g.calls
	g.calls++
	if g.over {
		return kafka.IllegalGeneration
	}
	if err := g.err(call); err != nil {
		return err
	}
	if g.commits == nil {
		g.commits = map[string]map[int]int64{}
	}
	for topic, ps := range offsets {
		if g.commits[topic] == nil {
			g.commits[topic] = map[int]int64{}
		}
		for p, off := range ps {
			if off < g.commits[topic][p] {
				panic(fmt.Sprintf("commit of %s/%d moves back from %d to %d", topic, p, g.commits[topic][p], off))
			}
			g.commits[topic][p] = off
			g.ev.add(fmt.Sprintf("commit %s/%d@%d", topic, p, off))
		}
	}
	return nil
}

func (g *fakeGen) committed(topic string, partition int) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.commits[topic][partition]
}

func (g *fakeGen) end() {
	g.mu.Lock()
	g.over = true
	g.mu.Unlock()
}

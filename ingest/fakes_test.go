package ingest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

var errBoom = errors.New("boom")

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
	errs    []error // errors of the first calls, in order; nil past the end
	forever error   // when set, every call after errs fails with it
}

func (s script) err(call int) error {
	if call < len(s.errs) {
		return s.errs[call]
	}
	return s.forever
}

type fakeStore struct {
	script
	ev    *events
	block chan struct{} // when set, Put waits for it to close
	// gate, when set, gives a channel that Put waits on for these tasks (nil: none).
	gate  func([]payload.Task) <-chan struct{}
	mu    sync.Mutex
	calls int
	tasks []payload.Task // of successful calls
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
	f.tasks = append(f.tasks, tasks...)
	f.ev.add("put " + strconv.Itoa(len(tasks)))
	return nil
}

func (f *fakeStore) snapshot() (int, []payload.Task) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, slices.Clone(f.tasks)
}

type fakeIndex struct {
	script
	ev      *events
	mu      sync.Mutex
	calls   int
	entries []zset.Entry
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
	f.entries = append(f.entries, entries...)
	f.ev.add("add " + strconv.Itoa(len(entries)))
	return nil
}

func (f *fakeIndex) snapshot() (int, []zset.Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, slices.Clone(f.entries)
}

// fakeWriter fails whole calls by script, or single messages by fail.
type fakeWriter struct {
	script
	fail  func(m kafka.Message, call int) error // per-message failure, nil = none
	limit int                                   // > 0: messages with more value bytes are refused as too large
	ev    *events
	mu    sync.Mutex
	calls int
	msgs  []kafka.Message
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
			if werrs[i] = f.fail(m, call); werrs[i] != nil {
				failed = true
			}
		}
		if !failed {
			werrs = nil
		}
	}
	for i, m := range msgs {
		if werrs == nil || werrs[i] == nil {
			f.msgs = append(f.msgs, m)
		}
	}
	f.ev.add("failed " + strconv.Itoa(len(msgs)))
	if werrs != nil {
		return werrs
	}
	return nil
}

func (f *fakeWriter) snapshot() (int, []kafka.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, slices.Clone(f.msgs)
}

// fakeReader serves messages from a channel and records commits.
type fakeReader struct {
	name    string // when set, events read "commit <name>", "close <name>"
	ev      *events
	in      chan kafka.Message
	mu      sync.Mutex
	commits []kafka.Message
	closed  bool
}

func newFakeReader(ev *events) *fakeReader {
	return &fakeReader{ev: ev, in: make(chan kafka.Message, 10000)}
}

func (r *fakeReader) FetchMessage(ctx context.Context) (kafka.Message, error) {
	select {
	case <-ctx.Done():
		return kafka.Message{}, ctx.Err()
	case m := <-r.in:
		return m, nil
	}
}

func (r *fakeReader) CommitMessages(ctx context.Context, msgs ...kafka.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, msgs...)
	r.ev.add(strings.TrimSpace("commit " + r.name))
	return nil
}

func (r *fakeReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.ev.add(strings.TrimSpace("close " + r.name))
	return nil
}

// committed returns the next offset to read per partition, from the commits.
func (r *fakeReader) committed() map[int]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int]int64{}
	for _, m := range r.commits {
		if m.Offset+1 > out[m.Partition] {
			out[m.Partition] = m.Offset + 1
		}
	}
	return out
}

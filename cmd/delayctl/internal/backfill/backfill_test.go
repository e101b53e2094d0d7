package backfill

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

var t0 = time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC).UnixMilli()

// fill stores n tasks for topic "orders" due t0, t0+10ms, ...; every
// cancelEvery-th is cancelled (0: none); every otherEvery-th is for topic
// "other" (0: none).
func fill(t *testing.T, n, cancelEvery, otherEvery int) *payload.Memory {
	t.Helper()
	m := payload.NewMemory()
	var tasks []payload.Task
	for i := range n {
		name := fmt.Sprintf("task-%d", i)
		task := payload.Task{
			ID: payload.TaskID(name), Name: name, Topic: "orders", ExecAt: t0 + int64(i)*10,
			Key: []byte(name), Value: []byte("v"), Headers: []payload.Header{{Key: "h", Value: []byte(name)}},
		}
		if otherEvery > 0 && i%otherEvery == 0 {
			task.Topic = "other"
		}
		tasks = append(tasks, task)
		if cancelEvery > 0 && i%cancelEvery == 1 {
			tasks = append(tasks, payload.Task{ID: task.ID, Name: name, ExecAt: task.ExecAt, Cancel: true})
		}
	}
	if err := m.Put(t.Context(), tasks); err != nil {
		t.Fatal(err)
	}
	return m
}

// writer records messages; fail makes the n-th call (1-based) fail; after
// runs after every call.
type writer struct {
	mu     sync.Mutex
	msgs   []kafka.Message
	calls  int
	fail   int
	before func(calls int)
	after  func(calls int)
}

func (w *writer) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	w.mu.Lock()
	w.calls++
	calls := w.calls
	if w.before != nil {
		w.before(calls)
	}
	if calls == w.fail {
		w.mu.Unlock()
		return errors.New("broker gone")
	}
	if err := ctx.Err(); err != nil {
		w.mu.Unlock()
		return err
	}
	w.msgs = append(w.msgs, msgs...)
	w.mu.Unlock()
	if w.after != nil {
		w.after(calls)
	}
	return nil
}

// index says every id in pending is pending.
type index struct {
	pending map[uint64]bool
	err     error
}

func (ix index) Pending(_ context.Context, e zset.Entry) (bool, error) {
	return ix.pending[e.ID], ix.err
}

func TestRun(t *testing.T) {
	store := fill(t, 1000, 10, 25) // 100 cancelled (i%10 == 1), 40 for "other" (i%25 == 0)
	pendingIDs := map[uint64]bool{}
	for i := range 1000 {
		if i%3 == 0 {
			pendingIDs[payload.TaskID(fmt.Sprintf("task-%d", i))] = true
		}
	}
	end := t0 + 10_000
	tests := []struct {
		name     string
		cfg      Config
		ix       Index
		want     Stats
		wantMsgs int
	}{
		{
			name:     "all",
			cfg:      Config{From: t0, To: end},
			want:     Stats{Scanned: 1000, Delivered: 900, Cancelled: 100},
			wantMsgs: 900,
		},
		{
			name:     "topic filter",
			cfg:      Config{From: t0, To: end, Topic: "orders"},
			want:     Stats{Scanned: 1000, Delivered: 860, Cancelled: 100, OtherTopic: 40},
			wantMsgs: 860,
		},
		{
			name:     "dry run writes nothing",
			cfg:      Config{From: t0, To: end, DryRun: true},
			want:     Stats{Scanned: 1000, Delivered: 900, Cancelled: 100},
			wantMsgs: 0,
		},
		{
			name: "skip pending",
			cfg:  Config{From: t0, To: end, SkipPending: true, BatchSize: 64},
			ix:   index{pending: pendingIDs},
			// ids i%3==0 pending: 334, of which i%10==1 cancelled first: 33 (i = 21, 51, ...).
			want:     Stats{Scanned: 1000, Delivered: 599, Pending: 301, Cancelled: 100},
			wantMsgs: 599,
		},
		{
			name:     "sub range",
			cfg:      Config{From: t0 + 100, To: t0 + 200},
			want:     Stats{Scanned: 10, Delivered: 9, Cancelled: 1},
			wantMsgs: 9,
		},
		{
			name:     "empty range",
			cfg:      Config{From: end, To: end + 1000},
			want:     Stats{},
			wantMsgs: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &writer{}
			var ix Index
			if tt.ix != nil {
				ix = tt.ix
			}
			got, err := Run(t.Context(), tt.cfg, store, ix, w)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Resume = tt.cfg.To
			got.Position = 0
			if got != tt.want {
				t.Errorf("stats %+v, want %+v", got, tt.want)
			}
			if len(w.msgs) != tt.wantMsgs {
				t.Fatalf("%d messages written, want %d", len(w.msgs), tt.wantMsgs)
			}
			seen := map[string]bool{}
			for _, m := range w.msgs {
				id := header(m, payload.HeaderID)
				if seen[id] {
					t.Fatalf("%s delivered twice", id)
				}
				seen[id] = true
				if m.Time.IsZero() {
					t.Fatalf("%s: message time not stamped", id)
				}
				if tt.cfg.Topic != "" && m.Topic != tt.cfg.Topic {
					t.Fatalf("%s delivered to %s", id, m.Topic)
				}
				if string(m.Key) != id || header(m, "h") != id || header(m, payload.HeaderAt) == "" {
					t.Fatalf("%s: wrong message %+v", id, m)
				}
			}
		})
	}
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestInterruptAndRerun cancels the context in the middle of a run: Run
// still writes the batch in hand and returns Resume; a rerun from Resume
// delivers the rest, so every task is delivered at least once and only rows
// due at the Resume millisecond twice.
func TestInterruptAndRerun(t *testing.T) {
	store := fill(t, 1000, 0, 0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := &writer{after: func(calls int) {
		if calls == 3 {
			cancel() // SIGINT during the 4th batch's scan
		}
	}}
	var progress []Stats
	cfg := Config{From: t0, To: t0 + 10_000, BatchSize: 100, Progress: func(s Stats) { progress = append(progress, s) }}
	got, err := Run(ctx, cfg, store, nil, w)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err %v, want interrupted: context canceled", err)
	}
	if got.Delivered != int64(len(w.msgs)) || got.Scanned != got.Delivered {
		t.Fatalf("stats %+v, %d messages written: every scanned row must be written", got, len(w.msgs))
	}
	if got.Delivered < 300 || got.Delivered >= 1000 {
		t.Fatalf("delivered %d: want the 3 batches and the one in hand", got.Delivered)
	}
	if got.Resume != t0+(got.Delivered-1)*10 {
		t.Fatalf("resume %d, want the due time of the last delivered row %d", got.Resume, t0+(got.Delivered-1)*10)
	}
	if len(progress) == 0 || progress[len(progress)-1] != got {
		t.Fatalf("last progress %+v, want the final stats %+v", progress, got)
	}

	cfg.From, cfg.Progress = got.Resume, nil
	again, err := Run(t.Context(), cfg, store, nil, w)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, m := range w.msgs {
		count[header(m, payload.HeaderID)]++
	}
	if len(count) != 1000 {
		t.Fatalf("%d distinct tasks delivered, want 1000", len(count))
	}
	if dup := len(w.msgs) - 1000; dup != 1 {
		t.Fatalf("%d duplicates, want 1 (the row due at the resume millisecond)", dup)
	}
	if again.Resume != cfg.To {
		t.Fatalf("complete run: resume %d, want %d", again.Resume, cfg.To)
	}
}

// TestInterruptDuringWrite cancels the context while a batch is being
// written: the write fails, and Run writes that batch again with a fresh
// context before it returns.
func TestInterruptDuringWrite(t *testing.T) {
	store := fill(t, 1000, 0, 0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := &writer{before: func(calls int) {
		if calls == 2 {
			cancel()
		}
	}}
	got, err := Run(ctx, Config{From: t0, To: t0 + 10_000, BatchSize: 100}, store, nil, w)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want interrupted", err)
	}
	if got.Delivered != 200 || len(w.msgs) != 200 || got.Resume != t0+199*10 || w.calls != 3 {
		t.Fatalf("stats %+v, %d messages in %d calls: want the first batch and the interrupted one, resume at row 200",
			got, len(w.msgs), w.calls)
	}
}

func TestWriteError(t *testing.T) {
	store := fill(t, 1000, 0, 0)
	w := &writer{fail: 2}
	got, err := Run(t.Context(), Config{From: t0, To: t0 + 10_000, BatchSize: 100}, store, nil, w)
	if err == nil || !strings.Contains(err.Error(), "broker gone") {
		t.Fatalf("err %v, want the writer's", err)
	}
	if got.Delivered != 100 || got.Resume != t0+99*10 {
		t.Fatalf("stats %+v: want 100 delivered, resume at the 100th row", got)
	}
}

func TestIndexError(t *testing.T) {
	store := fill(t, 10, 0, 0)
	_, err := Run(t.Context(), Config{From: t0, To: t0 + 10_000, SkipPending: true},
		store, index{err: errors.New("redis gone")}, &writer{})
	if err == nil || !strings.Contains(err.Error(), "redis gone") {
		t.Fatalf("err %v, want the index's", err)
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ix   Index
		w    Writer
		want []string
	}{
		{"to before from", Config{From: 2000, To: 1000}, nil, &writer{}, []string{"not after from"}},
		{"equal", Config{From: 1000, To: 1000}, nil, &writer{}, []string{"not after from"}},
		{"negative", Config{From: -1, To: 1000, BatchSize: -1}, nil, &writer{}, []string{"before 1970", "batch size"}},
		{"skip pending without index", Config{From: 0, To: 1, SkipPending: true}, nil, &writer{}, []string{"needs an index"}},
		{"no writer", Config{From: 0, To: 1}, nil, nil, []string{"writer"}},
		{"dry run needs no writer", Config{From: 0, To: 1, DryRun: true}, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(t.Context(), tt.cfg, payload.NewMemory(), tt.ix, tt.w)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not say %q", err, w)
				}
			}
		})
	}
}

package find

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/delayq/delayq/payload"
)

// Limits of a page.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	// MaxExamined bounds the rows one page reads: a filter that matches
	// few rows ends the page there, with a cursor to go on.
	MaxExamined = 50_000
)

// StateAny lists rows in every state.
const StateAny payload.Phase = "any"

// Errors of Query.Validate and List (bad input, not an outage).
var (
	ErrQuery  = errors.New("find: invalid query")
	ErrCursor = errors.New("find: invalid cursor")
)

// Scanner reads rows from a given row on: payload.Memory and the HBase
// store.
type Scanner interface {
	ScanFrom(ctx context.Context, from payload.Ref, to int64, fn func(payload.Task) error) error
}

// Query selects rows. The zero value lists the first DefaultLimit pending
// tasks.
type Query struct {
	From, To  int64         // due time range [From, To) in unix ms; To 0: no end
	Topic     string        // business topic; "" any
	KeyPrefix string        // business key prefix; "" any
	State     payload.Phase // "" (pending), PhasePending, PhaseCancelled, PhaseDone or StateAny
	Limit     int           // tasks per page; 0: DefaultLimit, at most MaxLimit
	Cursor    string        // Page.Next of the page before; "" from the start
}

// Validate reports every problem of q at once.
func (q Query) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrQuery}, args...)...))
	}
	switch q.State {
	case "", payload.PhasePending, payload.PhaseCancelled, payload.PhaseDone, StateAny:
	default:
		bad("state %q: want %s, %s, %s or %s", q.State, payload.PhasePending, payload.PhaseCancelled, payload.PhaseDone, StateAny)
	}
	if q.From < 0 || q.To < 0 {
		bad("from and to must not be before 1970")
	}
	if q.To != 0 && q.To <= q.From {
		bad("to (%d) must be after from (%d)", q.To, q.From)
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		bad("limit %d: want 1 to %d", q.Limit, MaxLimit)
	}
	if _, err := DecodeCursor(q.Cursor); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Task is one row of a page.
type Task struct {
	payload.Task
	State payload.Phase
}

// Page is the answer of List.
type Page struct {
	Tasks []Task
	// Next is the cursor of the next page; "" when the range is done.
	Next string
	// Examined is the rows read, matching or not.
	Examined int
}

// List returns the page of q. now decides which rows are pending.
func List(ctx context.Context, s Scanner, q Query, now time.Time) (Page, error) {
	if err := q.Validate(); err != nil {
		return Page{}, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	state := q.State
	if state == "" {
		state = payload.PhasePending
	}
	to := q.To
	if to == 0 {
		to = math.MaxInt64
	}
	from := payload.Ref{ExecAt: q.From}
	if state == payload.PhasePending {
		from.ExecAt = max(from.ExecAt, now.UnixMilli()+1)
	}
	if c, _ := DecodeCursor(q.Cursor); q.Cursor != "" && from.Before(c) {
		from = c
	}
	var (
		p    = Page{Tasks: []Task{}}
		last payload.Ref
		full = errors.New("page full")
	)
	err := s.ScanFrom(ctx, from, to, func(t payload.Task) error {
		p.Examined++
		last = t.Ref()
		if st := phase(t, now); (state == StateAny || st == state) && match(t, q) {
			p.Tasks = append(p.Tasks, Task{Task: t, State: st})
		}
		if len(p.Tasks) == limit || p.Examined == MaxExamined {
			return full
		}
		return nil
	})
	switch {
	case errors.Is(err, full):
		p.Next = EncodeCursor(payload.Ref{ExecAt: last.ExecAt, ID: last.ID + 1}) // ids < 2^63: no overflow
	case err != nil:
		return Page{}, fmt.Errorf("find: scan: %w", err)
	}
	return p, nil
}

func phase(t payload.Task, now time.Time) payload.Phase {
	switch {
	case t.Cancel:
		return payload.PhaseCancelled
	case t.ExecAt > now.UnixMilli():
		return payload.PhasePending
	}
	return payload.PhaseDone
}

func match(t payload.Task, q Query) bool {
	return (q.Topic == "" || t.Topic == q.Topic) && bytes.HasPrefix(t.Key, []byte(q.KeyPrefix))
}

// cursorV1 is the first byte of a cursor: the version of what follows.
const cursorV1 = 1

// EncodeCursor returns the cursor that resumes at r.
func EncodeCursor(r payload.Ref) string {
	b := make([]byte, 1, 17)
	b[0] = cursorV1
	b = binary.BigEndian.AppendUint64(b, uint64(r.ExecAt))
	b = binary.BigEndian.AppendUint64(b, r.ID)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor of EncodeCursor; "" is the zero Ref.
func DecodeCursor(s string) (payload.Ref, error) {
	if s == "" {
		return payload.Ref{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 17 || b[0] != cursorV1 {
		return payload.Ref{}, fmt.Errorf("%w %q: pass the next cursor of the page before, as it was", ErrCursor, s)
	}
	r := payload.Ref{ExecAt: int64(binary.BigEndian.Uint64(b[1:9])), ID: binary.BigEndian.Uint64(b[9:])}
	if r.ExecAt < 0 || r.ID > payload.MaxID+1 {
		return payload.Ref{}, fmt.Errorf("%w %q: out of range", ErrCursor, s)
	}
	return r, nil
}

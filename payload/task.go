package payload

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"time"
)

// Wire header names of the delay contract.
const (
	HeaderTopic = "delay-topic" // business topic to deliver to (input)
	HeaderAt    = "delay-at"    // due time, RFC 3339 or unix ms (input, output)
	HeaderAfter = "delay-after" // delay relative to the message time (input)
	HeaderID    = "delay-id"    // task name (input, output)
	HeaderOp    = "delay-op"    // "cancel", "reschedule" or "replace" (input)
	HeaderError = "delay-error" // why a message failed (delay-failed only)
)

// Values of delay-op.
const (
	OpCancel     = "cancel"     // cancel a task: by id and due time, or by id alone
	OpReschedule = "reschedule" // move a pending task to a new due time
	OpReplace    = "replace"    // a new task (value, headers, due time) in place of the task of the id
)

// Control says what a decoded input message asks for beyond storing a task.
type Control uint8

const (
	// ControlNone: a task to store (or, with Cancel set, a cancel by id
	// and due time, stored as the row's cancel marker).
	ControlNone Control = iota
	// ControlCancelID: cancel by id alone (delay-op: cancel without
	// delay-at). ExecAt is 0; only Name and ID are set.
	ControlCancelID
	// ControlReschedule: move the task named Name to ExecAt. Topic, Key,
	// Value and Headers are not set: the task keeps its own.
	ControlReschedule
	// ControlReplace: store this task (Topic, Key, Value, Headers, ExecAt
	// as a submit's) in place of the task named Name; ingest writes its
	// row under taskstate.VersionID, not ID.
	ControlReplace
)

// Task is one delayed message.
type Task struct {
	ID      uint64   // internal 63-bit id, TaskID(Name)
	Name    string   // delay-id string as given, or derived; never "" after Decode
	Topic   string   // business topic
	ExecAt  int64    // due time, unix milliseconds
	Key     []byte   // business key, byte for byte (nil stays nil)
	Value   []byte   // business value, byte for byte (nil stays nil)
	Headers []Header // pass-through headers, delay-* control headers removed
	Cancel  bool     // a cancel (delay-op: cancel): only the marker is stored
	// PastDue: its delay-at was already past when it was submitted (before
	// the record timestamp). Stored with the task, so that delivery counts
	// it apart from the lateness delayq causes.
	PastDue bool
	Control Control // ControlNone, or an op by id that ingest resolves through the id row
}

// Ref locates a task: what Redis holds and what the rowkey is built from.
type Ref struct {
	ID     uint64
	ExecAt int64 // unix milliseconds
}

// Ref returns the task's locator.
func (t Task) Ref() Ref { return Ref{ID: t.ID, ExecAt: t.ExecAt} }

// Before reports whether r sorts before o in (ExecAt, ID) order, the order
// of rows in a salt and of Scan.
func (r Ref) Before(o Ref) bool {
	return r.ExecAt < o.ExecAt || r.ExecAt == o.ExecAt && r.ID < o.ID
}

// Store keeps task payloads until they are due. Memory and HBase implement
// it; consumers usually declare the subset they need.
type Store interface {
	// Put writes tasks in batches. A task with Cancel set writes only the
	// cancel marker; a cancel wins in either arrival order. Put is
	// idempotent.
	Put(ctx context.Context, tasks []Task) error
	// Get returns one entry per ref, in order: nil when there is no row, a
	// task with Cancel=true when the row carries the cancel marker.
	Get(ctx context.Context, refs []Ref) ([]*Task, error)
	// Scan calls fn for every row with from <= ExecAt < to (cancelled rows
	// included, with Cancel=true), in (ExecAt, ID) order. An error from fn
	// stops the scan and is returned as is.
	Scan(ctx context.Context, from, to int64, fn func(Task) error) error
}

// MaxID is the largest task id: ids are 63-bit, so that Redis's listpack
// stores every zset member as an integer (it does so only for values that
// fit an int64; a larger one costs a 20-character string).
const MaxID = 1<<63 - 1

// TaskID maps a task name to its 63-bit id: a canonical decimal (no sign,
// no leading zeros, as snowflake ids are written) up to MaxID is that
// number; anything else is its 64-bit FNV-1a hash with the top bit cleared.
func TaskID(name string) uint64 {
	if canonicalUint(name) {
		if n, err := strconv.ParseUint(name, 10, 64); err == nil && n <= MaxID {
			return n
		}
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() & MaxID
}

func canonicalUint(s string) bool {
	if s == "" || len(s) > 20 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// DerivedName is the name of a task whose input carried no delay-id: its
// input topic, partition and offset, e.g. "delay-input/3/1234".
func DerivedName(topic string, partition int, offset int64) string {
	b := make([]byte, 0, len(topic)+24)
	b = append(b, topic...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, offset, 10)
	return string(b)
}

// timeLayout is RFC 3339 with milliseconds, as written in the output's
// delay-at header.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime formats unix milliseconds as the output's delay-at value
// (RFC 3339, UTC, milliseconds).
func FormatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(timeLayout)
}

// Deliverable is the output message of a due task: its topic, key, value and
// pass-through headers, plus delay-id (the task name) and delay-at (RFC 3339
// ms), so consumers can de-duplicate. The headers are a fresh slice.
func Deliverable(t Task) Message {
	h := make([]Header, 0, len(t.Headers)+2)
	h = append(h, t.Headers...)
	h = append(h,
		Header{Key: HeaderID, Value: []byte(t.Name)},
		Header{Key: HeaderAt, Value: []byte(FormatTime(t.ExecAt))},
	)
	return Message{Topic: t.Topic, Key: t.Key, Value: t.Value, Headers: h}
}

// IsCheck reports whether t is a check row (taskstate.CheckID): the
// failed-topic message of a reschedule that waited for its task, stored by
// ingest as a task with no topic and delay-error among its headers, which
// no decoded input has. The scanner sends it to the failed topic as it is
// when it comes due unmarked.
func IsCheck(t Task) bool {
	return t.Topic == "" && slices.ContainsFunc(t.Headers, func(h Header) bool { return h.Key == HeaderError })
}

// clone returns a deep copy of t, keeping nil slices nil.
func (t Task) clone() Task {
	c := t
	c.Key = cloneBytes(t.Key)
	c.Value = cloneBytes(t.Value)
	if t.Headers != nil {
		c.Headers = make([]Header, len(t.Headers))
		for i, h := range t.Headers {
			c.Headers[i] = Header{Key: h.Key, Value: cloneBytes(h.Value)}
		}
	}
	return c
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

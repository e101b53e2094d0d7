package console

import (
	"context"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
	"github.com/delayq/delayq/zset"
)

// Index is the part of the Redis index the console reads
// (zset.Maintenance).
type Index interface {
	// Backlog returns every registered segment with its pending count.
	Backlog(ctx context.Context) ([]zset.SegmentCount, error)
	// Pending reports whether the entry is still indexed (not delivered).
	Pending(ctx context.Context, e zset.Entry) (bool, error)
	// Key names the zset the entry belongs to.
	Key(e zset.Entry) string
}

// Store is the part of the payload store the console reads: task rows,
// id rows (a task's current due time, for the lookup by id alone) and
// rows by due time (the Tasks page).
type Store interface {
	Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error)
	GetIDs(ctx context.Context, ids []uint64) ([]payload.IDState, error)
	find.Scanner
}

// Canceller cancels a task by its id (the delay-id string) and due time,
// as delayctl cancel does: by writing a cancel to delay-input.
type Canceller interface {
	// Cancel writes a cancel of task id due at execAt (unix ms); execAt
	// 0 writes a cancel by id alone (no delay-at).
	Cancel(ctx context.Context, id string, execAt int64) error
}

// FailedTopic browses and replays the delay-failed topic.
type FailedTopic interface {
	// Browse returns up to q.Limit of the newest messages whose reason
	// contains q.Reason (all when empty), newest first.
	Browse(ctx context.Context, q FailedQuery) ([]FailedMessage, error)
	// Replay re-submits the messages at refs to the input topic they came
	// from, without delay-error and delay-source-* headers, and returns how
	// many it wrote; a message whose contents were dropped is not written
	// and is named in the error.
	Replay(ctx context.Context, refs []FailedRef) (int, error)
}

// FailedQuery selects failed messages.
type FailedQuery struct {
	Reason string // substring of delay-error; "" matches all
	Limit  int
}

// FailedRef locates one message of delay-failed.
type FailedRef struct {
	Partition int   `json:"partition"`
	Offset    int64 `json:"offset"`
}

// FailedMessage is one message of delay-failed.
type FailedMessage struct {
	FailedRef
	Time   time.Time
	Reason string // delay-error
	// Business is the business topic the message asked for (delay-topic).
	Business string
	// Dropped is set when its contents were dropped to fit delay-failed:
	// it is listed, never replayed.
	Dropped bool
	Key     []byte
	Value   []byte
	Headers []Header // every header, delay-error and delay-source-* included
	// Source is where ingest read the message before it failed,
	// "<topic>/<partition>/<offset>"; "" for a refusal by the scanner.
	Source string
}

// Header is one Kafka header.
type Header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Backends are what the API reads and acts on. A nil field turns off what
// needs it: the page says so instead of failing.
type Backends struct {
	Index     Index
	Store     Store
	Canceller Canceller
	Failed    FailedTopic
	Health    Health
	Topics    Topics // topics.go
}

package load

import (
	"math"
	"slices"
	"sync"
)

// Delivery is one message read from the business topic.
type Delivery struct {
	Seq     int   // task number, from the message key; -1 when unparsable
	ExecAt  int64 // delay-at of the delivered message, unix ms
	Written int64 // record timestamp: when delayq produced it, unix ms
	Seen    int64 // when the load tool read it, unix ms
}

// Sample is the first delivery of one task.
type Sample struct {
	ExecAt int64 // unix ms
	Late   int64 // Written - ExecAt, ms
	Seen   int64 // Seen - ExecAt, ms
}

// Tally judges deliveries against the submitted tasks. It is safe for
// concurrent use.
type Tally struct {
	mu        sync.Mutex
	due       []int64  // seq → exec_at of every submitted task
	count     []uint32 // seq → deliveries seen
	unique    int
	dups      int
	early     int
	unknown   int // not a submitted task, or its delay-at differs
	samples   []Sample
	firstSeen int64
	lastSeen  int64
	lastWrite int64
}

// NewTally returns a Tally of n tasks whose due times are set by SetDue.
func NewTally(n int) *Tally {
	return &Tally{due: make([]int64, n), count: make([]uint32, n), samples: make([]Sample, 0, n)}
}

// SetDue records that task seq is due at execAt (unix ms).
func (t *Tally) SetDue(seq int, execAt int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.due[seq] = execAt
}

// FirstDue returns the earliest due time set, unix ms (0 when none).
func (t *Tally) FirstDue() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first int64
	for _, at := range t.due {
		if at != 0 && (first == 0 || at < first) {
			first = at
		}
	}
	return first
}

// LastDue returns the latest due time set, unix ms.
func (t *Tally) LastDue() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last int64
	for _, at := range t.due {
		last = max(last, at)
	}
	return last
}

// Add counts one delivery.
func (t *Tally) Add(d Delivery) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d.Seq < 0 || d.Seq >= len(t.due) || t.due[d.Seq] == 0 || t.due[d.Seq] != d.ExecAt {
		t.unknown++
		return
	}
	t.count[d.Seq]++
	if t.count[d.Seq] > 1 {
		t.dups++
		return
	}
	t.unique++
	if d.Written < d.ExecAt {
		t.early++
	}
	t.samples = append(t.samples, Sample{ExecAt: d.ExecAt, Late: d.Written - d.ExecAt, Seen: d.Seen - d.ExecAt})
	if t.firstSeen == 0 || d.Seen < t.firstSeen {
		t.firstSeen = d.Seen
	}
	t.lastSeen = max(t.lastSeen, d.Seen)
	t.lastWrite = max(t.lastWrite, d.Written)
}

// Delivered returns how many distinct tasks arrived so far.
func (t *Tally) Delivered() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unique
}

// Outcome is what a Tally saw.
type Outcome struct {
	Delivered  int `json:"delivered"`  // distinct tasks delivered
	Lost       int `json:"lost"`       // submitted, never delivered
	Duplicates int `json:"duplicates"` // deliveries beyond the first of a task
	Early      int `json:"early"`      // delivered (record timestamp) before their delay-at
	Unknown    int `json:"unknown"`    // deliveries that match no submitted task
	// Lateness is record timestamp minus delay-at of each task's first
	// delivery; SeenLateness is the time the load tool read it minus
	// delay-at (adds the consumer's fetch latency).
	Lateness     Percentiles `json:"lateness_ms"`
	SeenLateness Percentiles `json:"seen_lateness_ms"`
	LastWritten  int64       `json:"last_written_unix_ms"` // latest record timestamp of a first delivery
}

// Outcome summarizes the deliveries so far.
func (t *Tally) Outcome() Outcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	late := make([]int64, len(t.samples))
	seen := make([]int64, len(t.samples))
	for i, s := range t.samples {
		late[i], seen[i] = s.Late, s.Seen
	}
	return Outcome{
		Delivered:    t.unique,
		Lost:         len(t.due) - t.unique,
		Duplicates:   t.dups,
		Early:        t.early,
		Unknown:      t.unknown,
		Lateness:     NewPercentiles(late),
		SeenLateness: NewPercentiles(seen),
		LastWritten:  t.lastWrite,
	}
}

// Samples returns a copy of the first-delivery samples.
func (t *Tally) Samples() []Sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.samples)
}

// Percentiles of a set of millisecond values (nearest rank).
type Percentiles struct {
	N    int     `json:"n"`
	Min  int64   `json:"min"`
	P50  int64   `json:"p50"`
	P90  int64   `json:"p90"`
	P99  int64   `json:"p99"`
	P999 int64   `json:"p999"`
	Max  int64   `json:"max"`
	Mean float64 `json:"mean"`
}

// NewPercentiles computes the percentiles of vs; it sorts vs in place.
func NewPercentiles(vs []int64) Percentiles {
	if len(vs) == 0 {
		return Percentiles{}
	}
	slices.Sort(vs)
	var sum float64
	for _, v := range vs {
		sum += float64(v)
	}
	return Percentiles{
		N:    len(vs),
		Min:  vs[0],
		P50:  Rank(vs, 0.50),
		P90:  Rank(vs, 0.90),
		P99:  Rank(vs, 0.99),
		P999: Rank(vs, 0.999),
		Max:  vs[len(vs)-1],
		Mean: sum / float64(len(vs)),
	}
}

// Rank returns the nearest-rank p-quantile (0 < p <= 1) of sorted: the
// smallest value with at least p of the values at or below it.
func Rank(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

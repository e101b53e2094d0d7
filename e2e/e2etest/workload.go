package e2etest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// Ledger records what was submitted and what delivering it must give. Every
// message carries a pass-through "seq" header that names it (see Env.Seq).
type Ledger struct {
	Due       map[string]Due  // valid tasks that must be delivered once
	Cancelled map[string]bool // tasks cancelled in time: never delivered
	Cancels   map[string]bool // the cancel messages: never in delay-failed
	Malformed map[string]bool // contract breakers: in delay-failed with a reason
	// Tasks either outcome suits, delivered or not (a cancel Kafka took
	// only after its task was due): not judged, never "unknown".
	Either map[string]bool
}

// Due is a task that must be delivered.
type Due struct {
	At       time.Time // its exec_at
	Accepted time.Time // when Kafka acknowledged it; zero means before At
}

// NewLedger returns an empty ledger.
func NewLedger() Ledger {
	return Ledger{Due: map[string]Due{}, Cancelled: map[string]bool{}, Cancels: map[string]bool{}, Malformed: map[string]bool{}, Either: map[string]bool{}}
}

// TaskMessage builds the input message of task seq for topic, produced at
// now and due at execAt, with its time in one of three formats by format
// % 3 (RFC 3339, unix ms, delay-after) and a delay-id unless id is "".
func TaskMessage(topic, seq, id string, now, execAt time.Time, format int) kafka.Message {
	h := []kafka.Header{{Key: "delay-topic", Value: []byte(topic)}, {Key: "seq", Value: []byte(seq)}}
	switch format % 3 {
	case 0:
		h = append(h, kafka.Header{Key: "delay-at", Value: []byte(execAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))})
	case 1:
		h = append(h, kafka.Header{Key: "delay-at", Value: []byte(strconv.FormatInt(execAt.UnixMilli(), 10))})
	case 2:
		// delay-after counts from the message time.
		h = append(h, kafka.Header{Key: "delay-after", Value: []byte(execAt.Sub(now).String())})
	}
	if id != "" {
		h = append(h, kafka.Header{Key: "delay-id", Value: []byte(id)})
	}
	return kafka.Message{Key: []byte("k" + seq), Value: []byte("payload-" + seq), Headers: h, Time: now}
}

// CancelMessage builds the cancel of task seq (same key, so the same
// partition as the task); its own seq is CancelSeq(seq).
func CancelMessage(topic, seq, id string, execAt, now time.Time) kafka.Message {
	return kafka.Message{Key: []byte("k" + seq), Time: now, Headers: []kafka.Header{
		{Key: "delay-op", Value: []byte("cancel")},
		{Key: "delay-id", Value: []byte(id)},
		{Key: "delay-at", Value: []byte(strconv.FormatInt(execAt.UnixMilli(), 10))},
		{Key: "delay-topic", Value: []byte(topic)},
		{Key: "seq", Value: []byte(CancelSeq(seq))},
	}}
}

// CancelSeq is the seq header of the cancel of task seq.
func CancelSeq(seq string) string { return seq + "/cancel" }

// MalformedMessage builds contract breaker seq from one entry of
// MalformedHeaders; key and value are derived from seq.
func MalformedMessage(seq string, hs []kafka.Header, now time.Time) kafka.Message {
	hs = append(slices.Clone(hs), kafka.Header{Key: "seq", Value: []byte(seq)})
	return kafka.Message{Key: []byte(seq), Value: []byte("bad payload " + seq), Headers: hs, Time: now}
}

// MalformedHeaders lists a dozen ways to break the wire contract.
func MalformedHeaders(topic string) [][]kafka.Header {
	hdr := func(kv ...string) []kafka.Header {
		var hs []kafka.Header
		for i := 0; i < len(kv); i += 2 {
			hs = append(hs, kafka.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return hs
	}
	return [][]kafka.Header{
		hdr("delay-after", "5s"),  // no delay-topic
		hdr("delay-topic", topic), // no time
		hdr("delay-topic", topic, "delay-at", "tomorrow"),
		hdr("delay-topic", topic, "delay-after", "soon"),
		hdr("delay-topic", topic, "delay-after", "-5s"),
		hdr("delay-topic", topic, "delay-after", "10000h"),
		hdr("delay-topic", topic, "delay-after", "5s", "delay-at", "1700000000000"),
		hdr("delay-topic", "__consumer_offsets", "delay-after", "5s"),
		hdr("delay-topic", "delay-scan", "delay-after", "5s"),
		hdr("delay-topic", topic, "delay-after", "5s", "delay-id", strings.Repeat("x", 129)),
		hdr("delay-topic", topic, "delay-op", "reschedule", "delay-id", "some-id"), // no new time
		hdr("delay-topic", topic, "delay-op", "frobnicate", "delay-after", "5s"),
		hdr("delay-topic", "bad topic name!", "delay-after", "5s"),
	}
}

// Workload is a fixed set of input messages and its ledger.
type Workload struct {
	Ledger
	Early []kafka.Message // produced first: cancels that precede their task
	Tasks []kafka.Message // the tasks and the malformed messages
	Late  []kafka.Message // produced last: cancels that follow their task
}

// NewWorkload builds n tasks of the Env's run for topic, due uniformly over
// [0, span) from now, in the three time formats, cancels of which half
// are produced before their task, and the contract breakers.
func (e *Env) NewWorkload(topic string, n, cancels int, span time.Duration, now time.Time) Workload {
	w := Workload{Ledger: NewLedger()}
	rng := rand.New(rand.NewPCG(uint64(now.UnixNano()), 7))
	now = now.Truncate(time.Millisecond)
	cancelAt := map[int]bool{}
	for _, i := range rng.Perm(n)[:cancels] {
		cancelAt[i] = true
	}
	for i := range n {
		seq := e.Seq(strconv.Itoa(i))
		delay := time.Duration(rng.Int64N(int64(span))).Truncate(time.Millisecond)
		execAt := now.Add(delay)
		id := fmt.Sprintf("%s-%d", e.Run, i)
		// Every tenth uncancelled task has no delay-id: its id is derived
		// from its input position.
		if !cancelAt[i] && i%10 == 9 {
			id = ""
		}
		w.Tasks = append(w.Tasks, TaskMessage(topic, seq, id, now, execAt, i))
		if !cancelAt[i] {
			w.Due[seq] = Due{At: execAt}
			continue
		}
		w.Cancelled[seq] = true
		w.Cancels[CancelSeq(seq)] = true
		cancel := CancelMessage(topic, seq, id, execAt, now)
		// A cancel after its task must reach delayq before the task is
		// due; tasks due soon are cancelled first.
		if len(w.Early) < cancels/2 || delay < span/2 {
			w.Early = append(w.Early, cancel)
		} else {
			w.Late = append(w.Late, cancel)
		}
	}
	for i, hs := range MalformedHeaders(topic) {
		seq := e.Seq("bad-" + strconv.Itoa(i))
		w.Malformed[seq] = true
		w.Tasks = append(w.Tasks, MalformedMessage(seq, hs, now))
	}
	rng.Shuffle(len(w.Tasks), func(i, j int) { w.Tasks[i], w.Tasks[j] = w.Tasks[j], w.Tasks[i] })
	return w
}

// Report is what a business topic received, judged against a ledger.
type Report struct {
	Accepted, Delivered, Lost, Duplicates, Early, CancelledDelivered, Unknown int
	// Lateness of each first delivery, sorted: delivered_at − exec_at, or
	// − the time Kafka accepted the task when that was later.
	Lateness   []time.Duration
	Deliveries []Delivery // first deliveries in the order read
	// Up to five seqs each of lost tasks, duplicated tasks and cancelled
	// tasks delivered, to look up in the logs.
	LostSeqs, DuplicateSeqs, CancelledSeqs []string
}

// Delivery is one first delivery.
type Delivery struct {
	At       time.Time // the delivered message's timestamp (delayd's produce time)
	Lateness time.Duration
}

// Judge compares what the business topic received with the ledger.
func (l Ledger) Judge(got []Received) Report {
	r := Report{Accepted: len(l.Due)}
	seen := map[string]int{}
	for _, g := range got {
		seq := Header(g.Msg, "seq")
		seen[seq]++
		if l.Either[seq] {
			continue
		}
		if l.Cancelled[seq] {
			r.CancelledDelivered++
			r.CancelledSeqs = sample(r.CancelledSeqs, seq)
			continue
		}
		due, ok := l.Due[seq]
		if !ok {
			r.Unknown++
			continue
		}
		if seen[seq] > 1 {
			r.Duplicates++
			r.DuplicateSeqs = sample(r.DuplicateSeqs, seq)
			continue
		}
		r.Delivered++
		if g.Msg.Time.Before(due.At) {
			r.Early++
		}
		late := g.Msg.Time.Sub(due.At)
		if due.Accepted.After(due.At) {
			late = g.Msg.Time.Sub(due.Accepted)
		}
		r.Lateness = append(r.Lateness, late)
		r.Deliveries = append(r.Deliveries, Delivery{At: g.Msg.Time, Lateness: late})
	}
	for seq := range l.Due {
		if seen[seq] == 0 {
			r.Lost++
			r.LostSeqs = sample(r.LostSeqs, seq)
		}
	}
	slices.Sort(r.Lateness)
	slices.Sort(r.LostSeqs)
	return r
}

func sample(seqs []string, seq string) []string {
	if len(seqs) < 5 {
		seqs = append(seqs, seq)
	}
	return seqs
}

// Recovery returns how long after since the last delivery at least limit
// late happened: the time lateness took to get back under limit once a
// dependency returned at since (0 when it never went over after since).
func (r Report) Recovery(since time.Time, limit time.Duration) time.Duration {
	var last time.Time
	for _, d := range r.Deliveries {
		if d.Lateness >= limit && d.At.After(last) {
			last = d.At
		}
	}
	if last.Before(since) {
		return 0
	}
	return last.Sub(since)
}

// LongestGap returns the longest time between two first deliveries one
// after the other by their timestamps: under steady input, the longest
// delivery stall.
func (r Report) LongestGap() time.Duration {
	at := make([]time.Time, len(r.Deliveries))
	for i, d := range r.Deliveries {
		at[i] = d.At
	}
	slices.SortFunc(at, time.Time.Compare)
	var gap time.Duration
	for i := 1; i < len(at); i++ {
		gap = max(gap, at[i].Sub(at[i-1]))
	}
	return gap
}

// Clean reports whether nothing was lost, duplicated, early, cancelled
// yet delivered or unknown.
func (r Report) Clean() bool {
	return r.Lost == 0 && r.Duplicates == 0 && r.Early == 0 && r.CancelledDelivered == 0 && r.Unknown == 0
}

func (r Report) String() string {
	return fmt.Sprintf("accepted=%d delivered=%d lost=%d duplicates=%d early=%d cancelled_delivered=%d unknown=%d lateness p50=%v p99=%v max=%v",
		r.Accepted, r.Delivered, r.Lost, r.Duplicates, r.Early, r.CancelledDelivered, r.Unknown,
		Percentile(r.Lateness, 0.50).Round(time.Millisecond), Percentile(r.Lateness, 0.99).Round(time.Millisecond),
		Percentile(r.Lateness, 1).Round(time.Millisecond))
}

// Failed is what delay-failed received of a ledger's messages.
type Failed struct {
	Valid     int               // valid tasks (due or cancelled): never allowed
	Cancels   int               // cancel messages: never allowed
	Malformed map[string]string // malformed seq → its delay-error
	Mangled   []string          // malformed seqs whose key or value changed
	// The seq and delay-error of the first few valid tasks and cancels.
	ValidReasons, CancelReasons []string
}

// JudgeFailed sorts what delay-failed received.
func (l Ledger) JudgeFailed(got []Received) Failed {
	f := Failed{Malformed: map[string]string{}}
	for _, g := range got {
		seq := Header(g.Msg, "seq")
		switch {
		case l.Malformed[seq]:
			f.Malformed[seq] = Header(g.Msg, "delay-error")
			if string(g.Msg.Value) != "bad payload "+seq || string(g.Msg.Key) != seq {
				f.Mangled = append(f.Mangled, seq)
			}
			continue
		case l.task(seq):
			f.Valid++
			if len(f.ValidReasons) < 3 {
				f.ValidReasons = append(f.ValidReasons, seq+": "+Header(g.Msg, "delay-error"))
			}
		case l.Cancels[seq]:
			f.Cancels++
			if len(f.CancelReasons) < 3 {
				f.CancelReasons = append(f.CancelReasons, seq+": "+Header(g.Msg, "delay-error"))
			}
		}
	}
	return f
}

// task reports whether seq is one of l's valid tasks, due or cancelled.
func (l Ledger) task(seq string) bool {
	_, due := l.Due[seq]
	return due || l.Cancelled[seq] || l.Either[seq]
}

// MalformedDone reports whether every malformed message of l reached
// delay-failed.
func (f Failed) MalformedDone(l Ledger) bool { return len(f.Malformed) >= len(l.Malformed) }

// Problems lists what is wrong in delay-failed: valid tasks or cancels in
// it, malformed messages missing, without a reason or changed.
func (f Failed) Problems(l Ledger) []string {
	var p []string
	if f.Valid > 0 {
		p = append(p, fmt.Sprintf("%d valid tasks in delay-failed (%s)", f.Valid, strings.Join(f.ValidReasons, "; ")))
	}
	if f.Cancels > 0 {
		p = append(p, fmt.Sprintf("%d cancels in delay-failed (%s)", f.Cancels, strings.Join(f.CancelReasons, "; ")))
	}
	for seq := range l.Malformed {
		reason, ok := f.Malformed[seq]
		switch {
		case !ok:
			p = append(p, "malformed "+seq+" not in delay-failed")
		case reason == "":
			p = append(p, "malformed "+seq+" in delay-failed without a delay-error header")
		}
	}
	for _, seq := range f.Mangled {
		p = append(p, "malformed "+seq+": key/value not passed through")
	}
	slices.Sort(p)
	return p
}

package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// workload is a set of input messages and what delivering them must give.
type workload struct {
	early     []kafka.Message  // produced first: cancels that precede their task
	tasks     []kafka.Message  // the tasks and the malformed messages
	late      []kafka.Message  // produced last: cancels that follow their task
	due       map[string]int64 // seq → exec_at (unix ms) of every task that must arrive
	cancelled map[string]bool  // seq of every cancelled task
	malformed map[string]bool  // seq of every malformed message
}

// newWorkload builds n tasks for topic due uniformly over [0, span) from
// now, in the three time formats (RFC 3339, unix ms, delay-after), cancels
// of which half are produced before their task, and the contract breakers.
// Every message carries a pass-through "seq" header that identifies it.
func newWorkload(run, topic string, n, cancels int, span time.Duration, now time.Time) workload {
	w := workload{due: map[string]int64{}, cancelled: map[string]bool{}, malformed: map[string]bool{}}
	rng := rand.New(rand.NewPCG(uint64(now.UnixNano()), 7))
	now = now.Truncate(time.Millisecond)
	cancelAt := map[int]bool{}
	for _, i := range rng.Perm(n)[:cancels] {
		cancelAt[i] = true
	}
	for i := range n {
		seq := strconv.Itoa(i)
		delay := time.Duration(rng.Int64N(int64(span))).Truncate(time.Millisecond)
		execAt := now.Add(delay)
		id := fmt.Sprintf("%s-%d", run, i)
		h := []kafka.Header{{Key: "delay-topic", Value: []byte(topic)}, {Key: "seq", Value: []byte(seq)}}
		switch i % 3 {
		case 0:
			h = append(h, kafka.Header{Key: "delay-at", Value: []byte(execAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))})
		case 1:
			h = append(h, kafka.Header{Key: "delay-at", Value: []byte(strconv.FormatInt(execAt.UnixMilli(), 10))})
		case 2:
			h = append(h, kafka.Header{Key: "delay-after", Value: []byte(delay.String())})
		}
		// Every tenth uncancelled task has no delay-id: its id is derived
		// from its input position.
		if cancelAt[i] || i%10 != 9 {
			h = append(h, kafka.Header{Key: "delay-id", Value: []byte(id)})
		}
		w.tasks = append(w.tasks, kafka.Message{
			Key: []byte("k" + seq), Value: []byte("payload-" + seq), Headers: h, Time: now,
		})
		if !cancelAt[i] {
			w.due[seq] = execAt.UnixMilli()
			continue
		}
		w.cancelled[seq] = true
		cancel := kafka.Message{Key: []byte("k" + seq), Time: now, Headers: []kafka.Header{
			{Key: "delay-op", Value: []byte("cancel")},
			{Key: "delay-id", Value: []byte(id)},
			{Key: "delay-at", Value: []byte(strconv.FormatInt(execAt.UnixMilli(), 10))},
			{Key: "delay-topic", Value: []byte(topic)},
		}}
		// A cancel after its task must reach delayq before the task is
		// due; tasks due soon are cancelled first.
		if len(w.early) < cancels/2 || delay < span/2 {
			w.early = append(w.early, cancel)
		} else {
			w.late = append(w.late, cancel)
		}
	}
	for i, hs := range malformedHeaders(topic) {
		seq := "bad-" + strconv.Itoa(i)
		w.malformed[seq] = true
		hs = append(hs, kafka.Header{Key: "seq", Value: []byte(seq)})
		w.tasks = append(w.tasks, kafka.Message{Key: []byte(seq), Value: []byte("bad payload " + seq), Headers: hs, Time: now})
	}
	rng.Shuffle(len(w.tasks), func(i, j int) { w.tasks[i], w.tasks[j] = w.tasks[j], w.tasks[i] })
	return w
}

// malformedHeaders lists a dozen ways to break the wire contract.
func malformedHeaders(topic string) [][]kafka.Header {
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
		hdr("delay-topic", topic, "delay-op", "cancel", "delay-id", "some-id"),
		hdr("delay-topic", topic, "delay-op", "frobnicate", "delay-after", "5s"),
		hdr("delay-topic", "bad topic name!", "delay-after", "5s"),
	}
}

// report is what the business topic received, judged against a workload.
type report struct {
	delivered, lost, duplicates, early, cancelledDelivered, unknown int
	lateness                                                        []time.Duration
}

func (w workload) judge(got []received) report {
	var r report
	seen := map[string]int{}
	for _, g := range got {
		seq := header(g.msg, "seq")
		seen[seq]++
		if w.cancelled[seq] {
			r.cancelledDelivered++
			continue
		}
		execAt, ok := w.due[seq]
		if !ok {
			r.unknown++
			continue
		}
		if seen[seq] > 1 {
			r.duplicates++
			continue
		}
		r.delivered++
		late := g.msg.Time.Sub(time.UnixMilli(execAt))
		if late < 0 {
			r.early++
		}
		r.lateness = append(r.lateness, late)
	}
	for seq := range w.due {
		if seen[seq] == 0 {
			r.lost++
		}
	}
	slices.Sort(r.lateness)
	return r
}

func (r report) String() string {
	return fmt.Sprintf("delivered=%d lost=%d duplicates=%d early=%d cancelled_delivered=%d unknown=%d lateness p50=%v p99=%v max=%v",
		r.delivered, r.lost, r.duplicates, r.early, r.cancelledDelivered, r.unknown,
		percentile(r.lateness, 0.50), percentile(r.lateness, 0.99), percentile(r.lateness, 1))
}

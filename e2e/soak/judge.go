package soak

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/payload"
)

// Merge returns one ledger holding the entries of every ledger given.
func Merge(ls ...e2etest.Ledger) e2etest.Ledger {
	m := e2etest.NewLedger()
	for _, l := range ls {
		maps.Copy(m.Due, l.Due)
		maps.Copy(m.Cancelled, l.Cancelled)
		maps.Copy(m.Cancels, l.Cancels)
		maps.Copy(m.Malformed, l.Malformed)
		maps.Copy(m.Either, l.Either)
	}
	return m
}

// Within returns the part of l whose tasks are due in [from, to] (due
// gives each task's due time): a fault window's share of the tasks. Its
// Report counts every other delivery as unknown: read only its lost,
// duplicates, early, cancelled delivered and lateness.
func Within(l e2etest.Ledger, due map[string]time.Time, from, to time.Time) e2etest.Ledger {
	w := e2etest.NewLedger()
	in := func(seq string) bool {
		at, ok := due[seq]
		return ok && !at.Before(from) && !at.After(to)
	}
	for seq, d := range l.Due {
		if in(seq) {
			w.Due[seq] = d
		}
	}
	for seq := range l.Cancelled {
		if in(seq) {
			w.Cancelled[seq] = true
		}
	}
	for seq := range l.Either {
		if in(seq) {
			w.Either[seq] = true
		}
	}
	return w
}

// Outside returns the part of l whose tasks are due in none of windows.
func Outside(l e2etest.Ledger, due map[string]time.Time, windows [][2]time.Time) e2etest.Ledger {
	w := Merge(l)
	w.Cancels, w.Malformed = map[string]bool{}, map[string]bool{}
	for _, win := range windows {
		for seq := range Within(l, due, win[0], win[1]).Due {
			delete(w.Due, seq)
		}
		for seq := range Within(l, due, win[0], win[1]).Cancelled {
			delete(w.Cancelled, seq)
		}
	}
	return w
}

// resched is the suffix of a reschedule's seq (seq of its task + resched).
const resched = "/resched"

// EarlySeqs returns up to ten seqs of l's tasks delivered before their
// due time, to look up in the logs.
func EarlySeqs(l e2etest.Ledger, got []e2etest.Received) []string {
	var seqs []string
	for _, g := range got {
		seq := e2etest.Header(g.Msg, "seq")
		if due, ok := l.Due[seq]; ok && g.Msg.Time.Before(due.At) && len(seqs) < 10 {
			seqs = append(seqs, seq)
		}
	}
	return seqs
}

// OccurrenceSeq is the seq a ledger gives occurrence n of the series whose
// messages carry seq.
func OccurrenceSeq(seq, n string) string { return seq + "#" + n }

// Occurrences returns got with the seq of every occurrence of a recurring
// series (a delivery with a delay-occurrence header whose seq is in
// series) made OccurrenceSeq(seq, n), so that a ledger judges each
// occurrence as a task of its own.
func Occurrences(got []e2etest.Received, series map[string]bool) []e2etest.Received {
	out := make([]e2etest.Received, len(got))
	for i, g := range got {
		out[i] = g
		seq, n := e2etest.Header(g.Msg, "seq"), e2etest.Header(g.Msg, payload.HeaderOccurrence)
		if n == "" || !series[seq] {
			continue
		}
		hs := slices.Clone(g.Msg.Headers)
		for j := range hs {
			if hs[j].Key == "seq" {
				hs[j] = kafka.Header{Key: "seq", Value: []byte(OccurrenceSeq(seq, n))}
			}
		}
		out[i].Msg.Headers = hs
	}
	return out
}

// Figures formats what a window's report says.
func Figures(r e2etest.Report) string {
	var b strings.Builder
	b.WriteString("tasks=")
	b.WriteString(itoa(r.Accepted))
	b.WriteString(" lost=" + itoa(r.Lost))
	b.WriteString(" duplicates=" + itoa(r.Duplicates))
	b.WriteString(" cancelled_delivered=" + itoa(r.CancelledDelivered))
	b.WriteString(" early=" + itoa(r.Early))
	b.WriteString(" lateness p99=" + e2etest.Ms(e2etest.Percentile(r.Lateness, 0.99)).String())
	b.WriteString(" max=" + e2etest.Ms(e2etest.Percentile(r.Lateness, 1)).String())
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

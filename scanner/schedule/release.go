package schedule

import "time"

// Fence is how far (exec_at, unix ms) the releaser may go: cutoff (the
// Hold's), or the earliest entry still in the index due within the order
// wait (earliest, when found) when that is earlier. A step holds a task
// before it removes its entry from the index, and the fence is read before
// the held sets are: a task due before the fence that a step has not
// delivered is in a held set by then, and goes out first.
func Fence(cutoff, earliest int64, found bool) int64 {
	if found && earliest < cutoff {
		return earliest
	}
	return cutoff
}

// Releasable reports whether a held topic is released at all: not while
// it is paused.
func Releasable(ctl Control) bool { return !ctl.Paused }

// Want is how many tokens a round asks for the read held refs of a topic
// with control ctl: one each with a rate, none without (-1: do not ask).
func Want(ctl Control, read int) int {
	if ctl.Rate > 0 {
		return read
	}
	return -1
}

// Admit returns the held refs (lowest exec_at first) that a round writes:
// with a rate, the first granted of them, lowest first; without, all.
func Admit[T any](ctl Control, held []T, granted int) []T {
	if ctl.Rate <= 0 {
		return held
	}
	return held[:max(0, min(granted, len(held)))]
}

// Again reports whether a topic goes another round at once after one that
// read read refs out of batch: a full batch and no rate (a resumed backlog
// goes out in batches; a rate-limited topic waits for its tokens).
func Again(ctl Control, read, batch int) bool {
	return read >= batch && ctl.Rate <= 0
}

// Forget reports whether a topic leaves the held topics after a round
// that read read refs: none held and the topic no longer holds.
func Forget(ctl Control, read int) bool { return read == 0 && !ctl.Holds() }

// Burst is the tokens a bucket of rate a second holds when full: a
// quarter second's worth, at least one (topicctl.Burst).
func Burst(rate int) int { return max(1, rate/burstShare) }

// burstShare is topicctl.Burst.
const burstShare = 4

// Bucket is a topic's token bucket: Tokens at At (unix ms). The zero
// Bucket is full at its first Take. topicctl's takeScript keeps the same
// bucket in Redis, shared by every instance.
type Bucket struct {
	Tokens float64
	At     int64
	set    bool
}

// Take takes up to want tokens at now, refilling at rate a second up to
// Burst(rate), and returns how many it got.
func (b *Bucket) Take(rate, want int, now time.Time) int {
	burst := float64(Burst(rate))
	ms := now.UnixMilli()
	if !b.set {
		b.Tokens, b.At, b.set = burst, ms, true
	}
	if ms > b.At {
		b.Tokens = min(burst, b.Tokens+float64(ms-b.At)*float64(rate)/1000)
	}
	got := max(0, min(want, int(b.Tokens)))
	b.Tokens -= float64(got)
	b.At = max(ms, b.At)
	return got
}

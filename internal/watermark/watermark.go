package watermark

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults.
const (
	DefaultLead      = 2 * time.Second
	DefaultMaxHold   = 5 * time.Minute
	DefaultPoll      = 200 * time.Millisecond
	DefaultIdleProof = time.Second
	// maxSamples bounds a Tracker's samples; when full the newest one is
	// replaced, which only makes the watermark more careful.
	maxSamples = 256
)

// ErrConfig is wrapped by the errors of Config.Validate.
var ErrConfig = errors.New("watermark: invalid config")

// Field is the name of the watermark of topic's partition in the store.
func Field(topic string, partition int) string {
	return topic + "/" + strconv.Itoa(partition)
}

// parseField splits a Field name; ok is false for anything else.
func parseField(f string) (topic string, partition int, ok bool) {
	i := strings.LastIndexByte(f, '/')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.Atoi(f[i+1:])
	if err != nil || p < 0 {
		return "", 0, false
	}
	return f[:i], p, true
}

// Tracker computes the watermark of one partition. It is not safe for
// concurrent use: one goroutine (ingest's publisher) samples all lanes.
type Tracker struct {
	IdleProof time.Duration // DefaultIdleProof when zero
	samples   []sample      // end offsets not yet reached, oldest first
	mark      int64         // the watermark so far, unix ms; 0: none yet
}

type sample struct {
	at  int64 // unix ms, taken before the end offset was asked for
	end int64 // the log end offset then
}

// Observe takes one sample: at (unix ms, before end was asked for), the
// partition's log end offset end, the next offset ingest will store
// (committed; negative while unknown) and, when the lane is waiting for its
// next message, since when (unix ms; zero while busy). It returns the
// watermark: every message appended before it is stored; zero while none
// is known.
func (t *Tracker) Observe(at, end, next, idleSince int64) int64 {
	if next >= 0 {
		if end > next {
			switch n := len(t.samples); {
			case n > 0 && t.samples[n-1].end >= end:
				// The older sample already waits for this offset.
			case n == maxSamples:
				t.samples[n-1] = sample{at: at, end: end}
			default:
				t.samples = append(t.samples, sample{at: at, end: end})
			}
		} else {
			t.mark = max(t.mark, at)
			t.samples = t.samples[:0]
		}
		i := 0
		for i < len(t.samples) && t.samples[i].end <= next {
			t.mark = max(t.mark, t.samples[i].at)
			i++
		}
		t.samples = append(t.samples[:0], t.samples[i:]...)
	}
	proof := t.IdleProof
	if proof <= 0 {
		proof = DefaultIdleProof
	}
	if idleSince > 0 && at-idleSince >= proof.Milliseconds() {
		t.mark = max(t.mark, at-proof.Milliseconds())
	}
	return t.mark
}

// Config configures a Follower. The zero value means the defaults.
type Config struct {
	// Topic is the input topic whose partitions hold deliveries back;
	// fields of other topics are ignored. Required.
	Topic string
	// Lead is how far past min(W) entries are delivered. Default 2s.
	Lead time.Duration
	// MaxHold is how far behind a partition may hold deliveries back
	// before it is ignored. Default 5m.
	MaxHold time.Duration
	// Poll is how often the watermarks are read. Default 200ms.
	Poll time.Duration
}

func (c *Config) setDefaults() {
	if c.Lead == 0 {
		c.Lead = DefaultLead
	}
	if c.MaxHold == 0 {
		c.MaxHold = DefaultMaxHold
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
}

// Validate reports every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Topic == "" {
		errs = append(errs, fmt.Errorf("%w: no topic", ErrConfig))
	}
	if c.Lead < 0 {
		errs = append(errs, fmt.Errorf("%w: negative lead %v", ErrConfig, c.Lead))
	}
	if c.MaxHold <= c.Lead {
		errs = append(errs, fmt.Errorf("%w: max hold %v: want more than the lead %v", ErrConfig, c.MaxHold, c.Lead))
	}
	if c.Poll <= 0 {
		errs = append(errs, fmt.Errorf("%w: poll %v: want > 0", ErrConfig, c.Poll))
	}
	return errors.Join(errs...)
}

package soak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/delayq/delayq/kafka/consumer"
)

// Kind is a kind of fault.
type Kind string

// The faults of a soak.
const (
	Kill      Kind = "delayd-kill-9"  // kill -9 a delayd, start it again after For
	Term      Kind = "delayd-sigterm" // SIGTERM a delayd (clean exit), start it again after For
	Pause     Kind = "delayd-sigstop" // SIGSTOP a delayd, SIGCONT after For (≥ MinPause)
	RedisKill Kind = "redis-kill-9"   // kill -9 Redis, start it again (on its AOF) after For
	HBaseStop Kind = "hbase-stop"     // stop HBase (SIGTERM), start it after For
	KafkaStop Kind = "kafka-stop"     // stop the broker (SIGTERM), start it after For
	Latency   Kind = "net-latency"    // Latency more on every answer of Target to delayd
	BlackHole Kind = "net-blackhole"  // nothing passes between delayd and Target
	Reset     Kind = "net-reset"      // every connection between delayd and Target reset
)

// Fault is one fault of a schedule.
type Fault struct {
	Kind Kind
	// Target: "d0", "d1" … for the delayd faults; "redis", "hbase" or
	// "kafka" for the service and network faults.
	Target  string
	Start   time.Duration // after the faults began
	For     time.Duration // from the fault to its healing
	Latency time.Duration // Latency only
}

func (f Fault) String() string {
	s := fmt.Sprintf("%-14s %-5s at %7v for %v", f.Kind, f.Target, f.Start, f.For)
	if f.Kind == Latency {
		s += fmt.Sprintf(" (+%v)", f.Latency)
	}
	return s
}

// resource is what a fault holds: no two faults of one resource overlap.
func (f Fault) resource() string {
	switch f.Kind {
	case Kill, Term, Pause:
		return "delayd/" + f.Target
	case Latency, BlackHole, Reset:
		return "net/" + f.Target
	}
	return "service/" + f.Target
}

// busy is how long f holds its resource: For plus the time its healing
// may take (a restart waits for readiness; HBase takes about 25 s to
// stop and longer to serve again).
func (f Fault) busy() time.Duration {
	switch f.Kind {
	case Kill, Term, Pause:
		return f.For + 40*time.Second
	case HBaseStop:
		return f.For + 120*time.Second
	case KafkaStop:
		return f.For + 60*time.Second
	case RedisKill:
		return f.For + 20*time.Second
	}
	return f.For + 5*time.Second
}

// Config shapes a schedule.
type Config struct {
	// Duration is the time in which faults start.
	Duration time.Duration
	// Delayd is how many delayd run (1–3).
	Delayd int
	// MaxConcurrent is how many faults may overlap; default 2.
	MaxConcurrent int
	// MinPause is the shortest SIGSTOP; default: the Kafka consumer
	// group's session timeout (consumer.SessionTimeout, 6 s) plus 4 s,
	// which is also past the dispatch lock's TTL (one tick) and the
	// scanner's release lease (2 s).
	MinPause time.Duration
}

func (c *Config) setDefaults() {
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = 2
	}
	if c.MinPause == 0 {
		c.MinPause = consumer.SessionTimeout + 4*time.Second
	}
	if c.Delayd == 0 {
		c.Delayd = 1
	}
}

// weights of the kinds, in draw order.
var weights = []struct {
	kind Kind
	n    int
}{
	{Kill, 3}, {Term, 2}, {Pause, 2}, {RedisKill, 1}, {HBaseStop, 1}, {KafkaStop, 1},
	{Latency, 2}, {BlackHole, 2}, {Reset, 2},
}

// services are the targets of the network faults.
var services = []string{"redis", "hbase", "kafka"}

// Schedule returns the faults of seed, by start time: a pure function of
// seed and cfg, so a failing seed replays the same faults. A fault starts
// every 5–30 s; one drawn on a resource still held by an earlier fault,
// or beyond MaxConcurrent overlapping faults, is left out (its draws are
// made all the same).
func Schedule(seed uint64, cfg Config) []Fault {
	cfg.setDefaults()
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	between := func(lo, hi time.Duration) time.Duration {
		return (lo + time.Duration(rng.Int64N(int64(hi-lo)+1))).Truncate(100 * time.Millisecond)
	}
	total := 0
	for _, w := range weights {
		total += w.n
	}
	var faults []Fault
	for t := between(5*time.Second, 30*time.Second); t < cfg.Duration; t += between(5*time.Second, 30*time.Second) {
		pick := rng.IntN(total)
		var kind Kind
		for _, w := range weights {
			if pick < w.n {
				kind = w.kind
				break
			}
			pick -= w.n
		}
		f := Fault{Kind: kind, Start: t}
		switch kind {
		case Kill, Term:
			f.Target, f.For = "d"+strconv.Itoa(rng.IntN(cfg.Delayd)), between(time.Second, 5*time.Second)
		case Pause:
			f.Target, f.For = "d"+strconv.Itoa(rng.IntN(cfg.Delayd)), between(cfg.MinPause, cfg.MinPause+10*time.Second)
		case RedisKill:
			f.Target, f.For = "redis", between(5*time.Second, 20*time.Second)
		case HBaseStop:
			f.Target, f.For = "hbase", between(20*time.Second, 60*time.Second)
		case KafkaStop:
			f.Target, f.For = "kafka", between(10*time.Second, 30*time.Second)
		case Latency:
			f.Target, f.For = services[rng.IntN(len(services))], between(10*time.Second, 40*time.Second)
			f.Latency = between(100*time.Millisecond, 800*time.Millisecond)
		case BlackHole:
			f.Target, f.For = services[rng.IntN(len(services))], between(10*time.Second, 30*time.Second)
		case Reset:
			f.Target, f.For = services[rng.IntN(len(services))], between(5*time.Second, 20*time.Second)
		}
		if fits(faults, f, cfg.MaxConcurrent) {
			faults = append(faults, f)
		}
	}
	return faults
}

// fits reports whether f can join faults: its resource is free and fewer
// than limit faults are still under way when it starts.
func fits(faults []Fault, f Fault, limit int) bool {
	active := 0
	for _, g := range faults {
		if g.Start+g.busy() <= f.Start {
			continue
		}
		if g.resource() == f.resource() {
			return false
		}
		active++
	}
	return active < limit
}

// Overlaps returns the largest number of faults under way at once
// (counting each fault's busy time), for tests.
func Overlaps(faults []Fault) int {
	most := 0
	for _, f := range faults {
		n := 0
		for _, g := range faults {
			if g.Start <= f.Start && f.Start < g.Start+g.busy() {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// Kinds returns the kinds of faults, sorted, for tests.
func Kinds(faults []Fault) []Kind {
	var ks []Kind
	for _, f := range faults {
		if !slices.Contains(ks, f.Kind) {
			ks = append(ks, f.Kind)
		}
	}
	slices.Sort(ks)
	return ks
}

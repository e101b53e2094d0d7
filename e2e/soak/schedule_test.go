package soak

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestScheduleIsAFunctionOfTheSeed: the same seed and config give the same
// faults, again and again; other seeds give other faults.
func TestScheduleIsAFunctionOfTheSeed(t *testing.T) {
	cfg := Config{Duration: 20 * time.Minute, Delayd: 3}
	seen := map[string]uint64{}
	for seed := range uint64(50) {
		a, b := Schedule(seed, cfg), Schedule(seed, cfg)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two schedules differ:\n%v\n%v", seed, a, b)
		}
		if len(a) == 0 {
			t.Fatalf("seed %d: no fault in 20 minutes", seed)
		}
		key := ""
		for _, f := range a {
			key += f.String() + ";"
		}
		if other, ok := seen[key]; ok {
			t.Errorf("seeds %d and %d give the same schedule", other, seed)
		}
		seen[key] = seed
	}
}

// TestScheduleShape: whatever the seed, faults start in the window in
// order, no resource holds two faults at once, no more than MaxConcurrent
// overlap, a SIGSTOP outlasts MinPause, targets exist; over many seeds
// every kind of fault shows up.
func TestScheduleShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"one delayd, 3 min", Config{Duration: 3 * time.Minute, Delayd: 1}},
		{"two delayd, 20 min", Config{Duration: 20 * time.Minute, Delayd: 2}},
		{"three delayd, one fault at a time", Config{Duration: 20 * time.Minute, Delayd: 3, MaxConcurrent: 1}},
		{"long pauses", Config{Duration: 10 * time.Minute, Delayd: 2, MinPause: 45 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.setDefaults()
			var kinds []Kind
			for seed := range uint64(200) {
				faults := Schedule(seed, tc.cfg)
				kinds = append(kinds, Kinds(faults)...)
				if !slices.IsSortedFunc(faults, func(a, b Fault) int { return int(a.Start - b.Start) }) {
					t.Fatalf("seed %d: faults out of order: %v", seed, faults)
				}
				if n := Overlaps(faults); n > cfg.MaxConcurrent {
					t.Fatalf("seed %d: %d faults at once, limit %d: %v", seed, n, cfg.MaxConcurrent, faults)
				}
				for i, f := range faults {
					if f.Start <= 0 || f.Start >= cfg.Duration || f.For <= 0 {
						t.Fatalf("seed %d: %v outside (0, %v)", seed, f, cfg.Duration)
					}
					if f.Kind == Pause && f.For < cfg.MinPause {
						t.Fatalf("seed %d: %v shorter than %v", seed, f, cfg.MinPause)
					}
					if (f.Kind == Latency) != (f.Latency > 0) {
						t.Fatalf("seed %d: %v: latency set on the wrong kind", seed, f)
					}
					if !validTarget(f, cfg.Delayd) {
						t.Fatalf("seed %d: %v: no such target", seed, f)
					}
					for _, g := range faults[:i] {
						if g.resource() == f.resource() && f.Start < g.Start+g.busy() {
							t.Fatalf("seed %d: %v starts while %v still holds %s", seed, f, g, f.resource())
						}
					}
				}
			}
			for _, w := range weights {
				if !slices.Contains(kinds, w.kind) {
					t.Errorf("no %s in 200 schedules", w.kind)
				}
			}
		})
	}
}

func validTarget(f Fault, delayd int) bool {
	switch f.Kind {
	case Kill, Term, Pause:
		for i := range delayd {
			if f.Target == "d"+strconv.Itoa(i) {
				return true
			}
		}
		return false
	case RedisKill:
		return f.Target == "redis"
	case HBaseStop:
		return f.Target == "hbase"
	case KafkaStop:
		return f.Target == "kafka"
	}
	return slices.Contains(services, f.Target)
}

package watermark

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTrackerReachesSampledEnd(t *testing.T) {
	var tr Tracker
	// Busy: the end moves ahead of what is stored.
	if w := tr.Observe(1000, 50, 10, 0); w != 0 {
		t.Fatalf("nothing reached yet: mark %d, want 0", w)
	}
	if w := tr.Observe(1200, 80, 40, 0); w != 0 {
		t.Fatalf("end 50 not reached: mark %d, want 0", w)
	}
	// Offset 50 stored: everything appended before 1000 is stored.
	if w := tr.Observe(1400, 90, 60, 0); w != 1000 {
		t.Fatalf("mark %d, want 1000 (the sample whose end 50 was reached)", w)
	}
	// Caught up: everything appended before this sample is stored.
	if w := tr.Observe(1600, 90, 90, 0); w != 1600 {
		t.Fatalf("mark %d, want 1600", w)
	}
	// A stall: the mark stands still however long it lasts.
	for at := int64(1800); at < 60_000; at += 200 {
		if w := tr.Observe(at, 95, 90, 0); w != 1600 {
			t.Fatalf("at %d: mark %d, want 1600 while offset 95 is not stored", at, w)
		}
	}
	if w := tr.Observe(60_000, 95, 95, 0); w != 60_000 {
		t.Fatalf("after the stall: mark %d, want 60000", w)
	}
}

func TestTrackerUnknownNextHolds(t *testing.T) {
	var tr Tracker
	if w := tr.Observe(1000, 5, -2, 0); w != 0 {
		t.Fatalf("nothing stored yet: mark %d, want 0", w)
	}
}

func TestTrackerIdleCoversTrailingMarkers(t *testing.T) {
	tr := Tracker{IdleProof: time.Second}
	// The log ends one offset past what was stored (a transaction marker)
	// and the lane waits for input.
	if w := tr.Observe(1500, 11, 10, 1000); w != 0 {
		t.Fatalf("idle for 0.5 s: mark %d, want 0", w)
	}
	if w := tr.Observe(2500, 11, 10, 1000); w != 1500 {
		t.Fatalf("idle for 1.5 s: mark %d, want 1500 (now - proof)", w)
	}
}

func TestTrackerSamplesBounded(t *testing.T) {
	var tr Tracker
	for i := range int64(10 * maxSamples) {
		tr.Observe(1000+i, 100+i, 0, 0)
	}
	if len(tr.samples) > maxSamples {
		t.Fatalf("%d samples kept, want at most %d", len(tr.samples), maxSamples)
	}
	// Reaching the first sample's end gives its time.
	if w := tr.Observe(99_999, 10_000, 100, 0); w != 1000 {
		t.Fatalf("mark %d, want 1000", w)
	}
}

func TestFieldRoundTrip(t *testing.T) {
	topic, p, ok := parseField(Field("delay-input", 7))
	if !ok || topic != "delay-input" || p != 7 {
		t.Fatalf("parseField(Field(delay-input, 7)) = %q %d %v", topic, p, ok)
	}
	for _, bad := range []string{"", "delay-input", "/3", "delay-input/x", "delay-input/-1"} {
		if _, _, ok := parseField(bad); ok {
			t.Errorf("parseField(%q) accepted", bad)
		}
	}
}

type marks map[string]int64

func (m marks) Marks(context.Context) (map[string]int64, error) { return m, nil }

func newFollower(t *testing.T, src Source) (*Follower, *bytes.Buffer, *prometheus.Registry) {
	t.Helper()
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	f, err := NewFollower(Config{Topic: "delay-input", Lead: 2 * time.Second, MaxHold: time.Minute}, src,
		slog.New(slog.NewTextHandler(&logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	return f, &logs, reg
}

func TestFollowerHoldsBehindSlowestPartition(t *testing.T) {
	f, logs, _ := newFollower(t, marks{})
	now := time.UnixMilli(100_000)
	if c := f.Cutoff(now.UnixMilli()); c != 0 {
		t.Fatalf("before the first read: cutoff %d, want 0 (hold everything)", c)
	}
	f.update(marks{"delay-input/0": 99_900, "delay-input/1": 90_000, "other/0": 1}, now)
	if c := f.Cutoff(now.UnixMilli()); c != 92_000 {
		t.Fatalf("cutoff %d, want 92000 (slowest partition + lead)", c)
	}
	if !strings.Contains(logs.String(), "deliveries held") || !strings.Contains(logs.String(), "delay-input/1") {
		t.Fatalf("no WARN naming the partition that holds:\n%s", logs)
	}
	f.update(marks{"delay-input/0": 99_900, "delay-input/1": 99_800}, now)
	if c := f.Cutoff(now.UnixMilli()); c != now.UnixMilli() {
		t.Fatalf("caught up: cutoff %d, want now %d", c, now.UnixMilli())
	}
	if !strings.Contains(logs.String(), "no longer held") {
		t.Fatalf("no INFO when the hold ends:\n%s", logs)
	}
}

func TestFollowerIgnoresPartitionBeyondMaxHold(t *testing.T) {
	f, logs, reg := newFollower(t, marks{})
	now := time.UnixMilli(1_000_000)
	f.update(marks{"delay-input/0": now.UnixMilli() - 100, "delay-input/1": now.UnixMilli() - 2*time.Minute.Milliseconds()}, now)
	if c := f.Cutoff(now.UnixMilli()); c != now.UnixMilli() {
		t.Fatalf("cutoff %d, want now: a partition 2m behind (max hold 1m) must not hold", c)
	}
	if !strings.Contains(logs.String(), "too far behind") {
		t.Fatalf("no WARN about the ignored partition:\n%s", logs)
	}
	if got := testutil.ToFloat64(f.held); got != 0 {
		t.Fatalf("delayq_delivery_held = %v, want 0", got)
	}
	if n, err := testutil.GatherAndCount(reg, "delayq_ingest_watermark_lag_seconds"); err != nil || n != 1 {
		t.Fatalf("lag gauge: %d series, %v", n, err)
	}
	// No watermarks at all (no ingest yet): nothing holds.
	f.update(marks{}, now)
	if c := f.Cutoff(now.UnixMilli()); c != now.UnixMilli() {
		t.Fatalf("no marks: cutoff %d, want now", c)
	}
}

type failing struct{}

func (failing) Marks(context.Context) (map[string]int64, error) { return nil, errors.New("redis down") }

func TestFollowerKeepsHorizonWhileUnreadable(t *testing.T) {
	f, _, _ := newFollower(t, failing{})
	f.update(marks{"delay-input/0": 5_000}, time.UnixMilli(6_000))
	ctx, cancel := context.WithTimeout(t.Context(), 3*f.cfg.Poll)
	defer cancel()
	f.Run(ctx)
	if c := f.Cutoff(math.MaxInt64); c != 7_000 {
		t.Fatalf("cutoff %d, want 7000: a failed read must leave the horizon", c)
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Lead: 2 * time.Second, MaxHold: time.Second, Poll: -1}
	err := c.Validate()
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("err %v, want ErrConfig", err)
	}
	c = Config{Topic: "t", Lead: -time.Second, MaxHold: time.Second, Poll: time.Second}
	err = errors.Join(err, c.Validate())
	for _, want := range []string{"no topic", "negative lead", "max hold", "poll"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

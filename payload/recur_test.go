package payload_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// series decodes a recurring input due at first and returns the due times
// of its occurrences, planned one after the other as the scanner does,
// until the series ends or max are planned.
func series(t *testing.T, first string, max int, kv ...string) []time.Time {
	t.Helper()
	kv = append([]string{"delay-topic", "orders", "delay-id", "r1", "delay-at", first}, kv...)
	task, err := payload.Decode(input(kv...), now, payload.DecodeConfig{MaxDelay: 10000 * time.Hour})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	var out []time.Time
	for range max {
		out = append(out, time.UnixMilli(task.ExecAt).UTC())
		if got := occurrenceOf(t, task); got != len(out) {
			t.Fatalf("occurrence %d carries delay-occurrence %d", len(out), got)
		}
		next, ok, err := payload.NextOccurrence(task, 1000*time.Hour)
		if err != nil {
			t.Fatalf("NextOccurrence after %d: %v", len(out), err)
		}
		if !ok {
			break
		}
		if next.ID != task.ID || next.Name != task.Name || next.Topic != task.Topic || string(next.Value) != "v" {
			t.Fatalf("next occurrence changed identity or payload: %+v", next)
		}
		// Planning the same occurrence again gives the same task: a crash
		// and a replayed scan store one next occurrence, not two.
		again, _, _ := payload.NextOccurrence(task, 1000*time.Hour)
		if again.ExecAt != next.ExecAt {
			t.Fatalf("planning is not deterministic: %d then %d", next.ExecAt, again.ExecAt)
		}
		task = next
	}
	return out
}

func occurrenceOf(t *testing.T, task payload.Task) int {
	t.Helper()
	n := -1
	for _, h := range task.Headers {
		if h.Key == payload.HeaderOccurrence {
			if n != -1 {
				t.Fatalf("delay-occurrence twice in %v", task.Headers)
			}
			n = int(mustInt(t, string(h.Value)))
		}
	}
	return n
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

func times(t *testing.T, loc *time.Location, layout string, vs ...string) []time.Time {
	t.Helper()
	out := make([]time.Time, len(vs))
	for i, v := range vs {
		tt, err := time.ParseInLocation(layout, v, loc)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = tt.UTC()
	}
	return out
}

func TestSeries(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	const local = "2006-01-02 15:04"
	tests := []struct {
		name  string
		first string
		max   int
		kv    []string
		want  []time.Time
	}{
		{name: "every with count", first: "2026-03-01T12:00:00Z", max: 10,
			kv:   []string{"delay-every", "2s", "delay-count", "3"},
			want: times(t, time.UTC, time.RFC3339, "2026-03-01T12:00:00Z", "2026-03-01T12:00:02Z", "2026-03-01T12:00:04Z")},
		{name: "every in seconds keeps the first time's milliseconds", first: "2026-03-01T12:00:00.250Z", max: 3,
			kv:   []string{"delay-every", "90"},
			want: times(t, time.UTC, time.RFC3339Nano, "2026-03-01T12:00:00.25Z", "2026-03-01T12:01:30.25Z", "2026-03-01T12:03:00.25Z")},
		{name: "every until, inclusive", first: "2026-03-01T12:00:00Z", max: 10,
			kv:   []string{"delay-every", "1h", "delay-until", "2026-03-01T14:00:00Z"},
			want: times(t, time.UTC, time.RFC3339, "2026-03-01T12:00:00Z", "2026-03-01T13:00:00Z", "2026-03-01T14:00:00Z")},
		{name: "every is absolute time across DST", first: "2026-03-07T14:00:00Z", max: 3,
			kv:   []string{"delay-every", "24h"},
			want: times(t, time.UTC, time.RFC3339, "2026-03-07T14:00:00Z", "2026-03-08T14:00:00Z", "2026-03-09T14:00:00Z")},
		{name: "cron UTC", first: "2026-03-01T12:00:00Z", max: 3,
			kv:   []string{"delay-cron", "0 9 * * *"},
			want: times(t, time.UTC, time.RFC3339, "2026-03-01T12:00:00Z", "2026-03-02T09:00:00Z", "2026-03-03T09:00:00Z")},
		{name: "cron 9:00 New York across spring forward", first: "2026-03-06T14:00:00Z", max: 4,
			kv:   []string{"delay-cron", "0 9 * * *", "delay-tz", "America/New_York"},
			want: times(t, ny, local, "2026-03-06 09:00", "2026-03-07 09:00", "2026-03-08 09:00", "2026-03-09 09:00")},
		{name: "cron 9:00 New York across fall back", first: "2026-10-31T13:00:00Z", max: 3,
			kv:   []string{"delay-cron", "0 9 * * *", "delay-tz", "America/New_York"},
			want: times(t, ny, local, "2026-10-31 09:00", "2026-11-01 09:00", "2026-11-02 09:00")},
		{name: "cron 1:30 New York, the repeated hour runs once", first: "2026-10-31T05:30:00Z", max: 3,
			kv:   []string{"delay-cron", "30 1 * * *", "delay-tz", "America/New_York"},
			want: times(t, time.UTC, time.RFC3339, "2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z")},
		{name: "cron 2:30 New York, the skipped 2:30 runs at 3:30 EDT that day", first: "2026-03-07T07:30:00Z", max: 3,
			kv:   []string{"delay-cron", "30 2 * * *", "delay-tz", "America/New_York"},
			want: times(t, time.UTC, time.RFC3339, "2026-03-07T07:30:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z")},
		{name: "cron every 30 min New York, the repeated hour runs once", first: "2026-11-01T05:00:00Z", max: 3,
			kv:   []string{"delay-cron", "*/30 * * * *", "delay-tz", "America/New_York"},
			want: times(t, time.UTC, time.RFC3339, "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z")},
		{name: "cron POSIX day-of-month or day-of-week", first: "2026-03-01T00:00:00Z", max: 4,
			kv:   []string{"delay-cron", "0 0 13 * 5"}, // the 13th, and Fridays
			want: times(t, time.UTC, time.RFC3339, "2026-03-01T00:00:00Z", "2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z", "2026-03-20T00:00:00Z")},
		{name: "cron descriptor with count and until", first: "2026-03-01T12:00:00Z", max: 10,
			kv:   []string{"delay-cron", "@daily", "delay-count", "5", "delay-until", "2026-03-03T00:00:00Z"},
			want: times(t, time.UTC, time.RFC3339, "2026-03-01T12:00:00Z", "2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := series(t, tt.first, tt.max, tt.kv...)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d occurrences %v, want %v", len(got), got, tt.want)
			}
			for i := range got {
				if !got[i].Equal(tt.want[i]) {
					t.Errorf("occurrence %d at %v, want %v", i+1, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestSeriesResumed(t *testing.T) {
	task, err := payload.Decode(input("delay-topic", "orders", "delay-at", "2026-03-01T12:00:00Z",
		"delay-every", "1m", "delay-count", "3", "delay-occurrence", "2"), now, payload.DecodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if n := occurrenceOf(t, task); n != 2 {
		t.Fatalf("delay-occurrence %d, want 2", n)
	}
	next, ok, err := payload.NextOccurrence(task, 0)
	if err != nil || !ok || occurrenceOf(t, next) != 3 {
		t.Fatalf("next: ok=%v err=%v headers=%v", ok, err, next.Headers)
	}
	if _, ok, _ := payload.NextOccurrence(next, 0); ok {
		t.Fatal("occurrence 3 of 3 planned a fourth")
	}
}

func TestNextOccurrenceHeaders(t *testing.T) {
	task, err := payload.Decode(input("delay-topic", "orders", "delay-at", "2026-03-01T12:00:00Z",
		"x-trace", "abc", "delay-every", "1m", "delay-count", "5"), now, payload.DecodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	next, _, _ := payload.NextOccurrence(task, 0)
	wantKeys := []string{"x-trace", "delay-every", "delay-count", "delay-occurrence"}
	for i, hs := range [][]payload.Header{task.Headers, next.Headers} {
		var keys []string
		for _, h := range hs {
			keys = append(keys, h.Key)
		}
		if strings.Join(keys, ",") != strings.Join(wantKeys, ",") {
			t.Errorf("occurrence %d headers %v, want %v", i+1, keys, wantKeys)
		}
	}
	if occurrenceOf(t, task) != 1 || occurrenceOf(t, next) != 2 {
		t.Errorf("occurrences %d, %d", occurrenceOf(t, task), occurrenceOf(t, next))
	}
	// The output carries the occurrence number.
	m := payload.Deliverable(next)
	found := false
	for _, h := range m.Headers {
		found = found || h.Key == payload.HeaderOccurrence && string(h.Value) == "2"
	}
	if !found {
		t.Errorf("deliverable headers %v lack delay-occurrence 2", m.Headers)
	}
}

func TestNextOccurrenceMaxGap(t *testing.T) {
	task, err := payload.Decode(input("delay-topic", "orders", "delay-at", "2026-03-01T12:00:00Z",
		"delay-every", "2h"), now, payload.DecodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := payload.NextOccurrence(task, time.Hour); ok || err == nil {
		t.Fatalf("a 2h gap under a 1h maximum: ok=%v err=%v", ok, err)
	}
	plain, _ := payload.Decode(input("delay-topic", "orders", "delay-at", "2026-03-01T12:00:00Z"), now, payload.DecodeConfig{})
	if _, ok, err := payload.NextOccurrence(plain, 0); ok || err != nil {
		t.Fatalf("a task that does not recur: ok=%v err=%v", ok, err)
	}
}

// TestOccurrenceNearMax: an occurrence numbered near 2^63 is planned
// without wrapping to a negative number; the one numbered math.MaxInt64
// is the last.
func TestOccurrenceNearMax(t *testing.T) {
	for _, tt := range []struct {
		occ, next string // next "": the series ends
	}{
		{"9223372036854775806", "9223372036854775807"},
		{"9223372036854775807", ""},
	} {
		task, err := payload.Decode(input("delay-topic", "orders", "delay-at", "2026-03-01T12:00:00Z",
			"delay-every", "1m", "delay-occurrence", tt.occ), now, payload.DecodeConfig{})
		if err != nil {
			t.Fatalf("occurrence %s: %v", tt.occ, err)
		}
		next, ok, err := payload.NextOccurrence(task, time.Hour)
		switch {
		case err != nil:
			t.Errorf("occurrence %s: %v", tt.occ, err)
		case tt.next == "" && ok:
			t.Errorf("occurrence %s: planned %+v, want the series to end", tt.occ, next)
		case tt.next != "" && (!ok || occurrenceOf(t, next) <= 0 || string(next.Headers[len(next.Headers)-1].Value) != tt.next):
			t.Errorf("occurrence %s: next %v ok=%v, want occurrence %s", tt.occ, next.Headers, ok, tt.next)
		}
	}
}

func TestDecodeRecurrenceRefused(t *testing.T) {
	base := []string{"delay-topic", "orders", "delay-at", "2026-03-01T12:00:00Z"}
	tests := []struct {
		name string
		kv   []string
		cfg  payload.DecodeConfig
		want string
	}{
		{"every malformed", []string{"delay-every", "often"}, payload.DecodeConfig{}, `delay-every: "often" is not a Go duration or seconds`},
		{"every empty", []string{"delay-every", ""}, payload.DecodeConfig{}, `delay-every: "" is not a Go duration`},
		{"every negative", []string{"delay-every", "-1m"}, payload.DecodeConfig{}, `delay-every: "-1m" is not a Go duration`},
		{"every under a second", []string{"delay-every", "500ms"}, payload.DecodeConfig{}, `delay-every: "500ms" is under the minimum 1s`},
		{"every over max delay", []string{"delay-every", "2h"}, payload.DecodeConfig{MaxDelay: time.Hour}, "delay-every: 2h0m0s is over the maximum delay 1h0m0s"},
		{"every twice", []string{"delay-every", "1m", "delay-every", "2m"}, payload.DecodeConfig{}, "delay-every: header given more than once"},
		{"every and cron", []string{"delay-every", "1m", "delay-cron", "* * * * *"}, payload.DecodeConfig{}, "delay-every and delay-cron: give one, not both"},
		{"cron malformed", []string{"delay-cron", "0 9 * *"}, payload.DecodeConfig{}, `delay-cron: "0 9 * *" is not a cron expression`},
		{"cron out of range", []string{"delay-cron", "61 9 * * *"}, payload.DecodeConfig{}, `delay-cron: "61 9 * * *" is not a cron expression`},
		{"cron empty", []string{"delay-cron", " "}, payload.DecodeConfig{}, "delay-cron: empty"},
		{"cron TZ prefix", []string{"delay-cron", "TZ=Asia/Tokyo 0 9 * * *"}, payload.DecodeConfig{}, "give the time zone in delay-tz"},
		{"cron @every", []string{"delay-cron", "@every 1h"}, payload.DecodeConfig{}, "use delay-every"},
		{"cron never again", []string{"delay-cron", "0 0 30 2 *"}, payload.DecodeConfig{}, ""}, // accepted: one occurrence (checked below)
		{"cron gap over max delay", []string{"delay-cron", "0 0 1 1 *"}, payload.DecodeConfig{}, "-01-01T00:00:00.000Z, over the maximum delay 720h0m0s"},
		{"cron gap over max delay with count", []string{"delay-cron", "0 0 1 1 *", "delay-count", "2"}, payload.DecodeConfig{}, "over the maximum delay"},
		{"cron gap past the last occurrence", []string{"delay-cron", "0 0 1 1 *", "delay-count", "1"}, payload.DecodeConfig{}, ""},
		{"cron gap past until", []string{"delay-cron", "0 0 1 1 *", "delay-until", "2026-03-20T00:00:00Z"}, payload.DecodeConfig{}, ""},
		{"every 1s endless", []string{"delay-every", "1s"}, payload.DecodeConfig{}, "delay-every: 1s without delay-count or delay-until: an endless series runs at most every 1m0s"},
		{"every 59s endless", []string{"delay-every", "59s"}, payload.DecodeConfig{}, "an endless series runs at most every 1m0s"},
		{"every 1m endless", []string{"delay-every", "1m"}, payload.DecodeConfig{}, ""},
		{"every 1s with count", []string{"delay-every", "1s", "delay-count", "10"}, payload.DecodeConfig{}, ""},
		{"every 1s with until", []string{"delay-every", "1s", "delay-until", "2026-03-02T00:00:00Z"}, payload.DecodeConfig{}, ""},
		{"count at the int64 limit", []string{"delay-every", "1m", "delay-count", "9223372036854775807"}, payload.DecodeConfig{}, ""},
		{"count over the int64 limit", []string{"delay-every", "1m", "delay-count", "9223372036854775808"}, payload.DecodeConfig{}, `delay-count: "9223372036854775808" is not a whole number >= 1`},
		{"occurrence over the int64 limit", []string{"delay-every", "1m", "delay-occurrence", "9223372036854775808"}, payload.DecodeConfig{}, `delay-occurrence: "9223372036854775808" is not a whole number >= 1`},
		{"tz unknown", []string{"delay-cron", "0 9 * * *", "delay-tz", "Mars/Olympus"}, payload.DecodeConfig{}, `delay-tz: "Mars/Olympus" is not a known IANA time zone`},
		{"tz Local", []string{"delay-cron", "0 9 * * *", "delay-tz", "Local"}, payload.DecodeConfig{}, `delay-tz: "Local" is not an IANA time zone name`},
		{"tz with every", []string{"delay-every", "1m", "delay-tz", "UTC"}, payload.DecodeConfig{}, "delay-tz: only with delay-cron"},
		{"tz alone", []string{"delay-tz", "UTC"}, payload.DecodeConfig{}, "delay-tz: only with delay-every or delay-cron"},
		{"count alone", []string{"delay-count", "3"}, payload.DecodeConfig{}, "delay-count: only with delay-every or delay-cron"},
		{"until alone", []string{"delay-until", "2026-03-02T00:00:00Z"}, payload.DecodeConfig{}, "delay-until: only with"},
		{"count zero", []string{"delay-every", "1m", "delay-count", "0"}, payload.DecodeConfig{}, `delay-count: "0" is not a whole number >= 1`},
		{"count malformed", []string{"delay-every", "1m", "delay-count", "three"}, payload.DecodeConfig{}, `delay-count: "three" is not a whole number`},
		{"until malformed", []string{"delay-every", "1m", "delay-until", "soon"}, payload.DecodeConfig{}, `delay-until: "soon" is not RFC 3339 or unix ms`},
		{"until epoch", []string{"delay-every", "1m", "delay-until", "0"}, payload.DecodeConfig{}, "delay-until: \"0\" is at or before the unix epoch"},
		{"until unix seconds", []string{"delay-every", "1m", "delay-until", "1795829478"}, payload.DecodeConfig{},
			"delay-until: 1795829478 looks like unix seconds; delay-until is unix milliseconds (1795829478000)"},
		{"until RFC 3339 before 1973", []string{"delay-every", "1m", "delay-until", "1971-01-01T00:00:00Z"}, payload.DecodeConfig{},
			"the earliest due time accepted"},
		{"until before first", []string{"delay-every", "1m", "delay-until", "2026-03-01T11:00:00Z"}, payload.DecodeConfig{}, "delay-until: 2026-03-01T11:00:00.000Z is before the first occurrence"},
		{"occurrence malformed", []string{"delay-every", "1m", "delay-occurrence", "0"}, payload.DecodeConfig{}, `delay-occurrence: "0" is not a whole number >= 1`},
		{"occurrence past count", []string{"delay-every", "1m", "delay-count", "2", "delay-occurrence", "3"}, payload.DecodeConfig{}, "delay-occurrence: 3 is past delay-count 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := payload.Decode(input(append(append([]string{}, base...), tt.kv...)...), now, tt.cfg)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", tt.want)
			}
			if !errors.Is(err, payload.ErrContract) {
				t.Errorf("%v does not wrap ErrContract", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("reason %q, want it to contain %q", err, tt.want)
			}
		})
	}
	t.Run("cancel with a recurrence", func(t *testing.T) {
		_, err := payload.Decode(input("delay-op", "cancel", "delay-id", "r", "delay-at", "2026-03-01T12:00:00Z",
			"delay-every", "1m"), now, payload.DecodeConfig{})
		if err == nil || !strings.Contains(err.Error(), "delay-every: not with delay-op cancel") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cancel by id with a recurrence", func(t *testing.T) {
		_, err := payload.Decode(input("delay-op", "cancel", "delay-id", "r", "delay-count", "2"), now, payload.DecodeConfig{})
		if err == nil || !strings.Contains(err.Error(), "delay-count: not with delay-op cancel") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("reschedule with a recurrence", func(t *testing.T) {
		_, err := payload.Decode(input("delay-op", "reschedule", "delay-id", "r", "delay-at", "2026-03-01T12:00:00Z",
			"delay-cron", "@daily"), now, payload.DecodeConfig{})
		if err == nil || !strings.Contains(err.Error(), "delay-cron: not with delay-op reschedule") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cron that never comes again ends after the first", func(t *testing.T) {
		got := series(t, "2026-03-01T12:00:00Z", 5, "delay-cron", "0 0 30 2 *")
		if len(got) != 1 {
			t.Fatalf("got %v", got)
		}
	})
}

package delayq

import (
	"errors"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// TestSubmitRecurringWire: Every and Cron become the recurrence headers,
// which Decode accepts, and the decoded task plans its next occurrence.
func TestSubmitRecurringWire(t *testing.T) {
	f := newFake(t, Config{SlowAfter: -1})
	until := testNow.Add(48 * time.Hour)
	tests := []struct {
		name     string
		task     Task
		wantNext time.Duration // after the first occurrence
	}{
		{"every with count", Task{ID: "e", Topic: "orders", After: time.Minute, Every: 90 * time.Second, Count: 3}, 90 * time.Second},
		{"cron in a zone until", Task{ID: "c", Topic: "orders", At: time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC),
			Cron: "0 9 * * *", TZ: "Europe/London", Until: until}, 24 * time.Hour},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := f.c.Submit(t.Context(), tt.task)
			if err != nil {
				t.Fatal(err)
			}
			m := f.read(t, topics.Input, int64(i))
			got, err := payload.Decode(record.ToMessage(m), testNow, payload.DecodeConfig{})
			if err != nil {
				t.Fatalf("Decode rejects the client's message: %v", err)
			}
			next, ok, err := payload.NextOccurrence(got, 0)
			if err != nil || !ok {
				t.Fatalf("next occurrence: ok=%v err=%v (headers %v)", ok, err, got.Headers)
			}
			if d := time.Duration(next.ExecAt-r.At.UnixMilli()) * time.Millisecond; d != tt.wantNext {
				t.Errorf("next occurrence %v after the first, want %v", d, tt.wantNext)
			}
		})
	}
}

func TestInvalidRecurring(t *testing.T) {
	f := newFake(t, Config{})
	tests := []struct {
		name string
		task Task
		want string
	}{
		{"every and cron", Task{Topic: "t", Every: time.Minute, Cron: "@daily"}, "give one, not both"},
		{"every too short", Task{Topic: "t", Every: time.Millisecond}, "under the minimum 1s"},
		{"bad cron", Task{Topic: "t", Cron: "every day"}, "is not a cron expression"},
		{"bad zone", Task{Topic: "t", Cron: "@daily", TZ: "Mars/Olympus"}, "not a known IANA time zone"},
		{"zone without cron", Task{Topic: "t", Every: time.Hour, TZ: "UTC"}, "delay-tz: only with delay-cron"},
		{"count without schedule", Task{Topic: "t", Count: 3}, "delay-count: only with"},
		{"negative count", Task{Topic: "t", Every: time.Hour, Count: -1}, "Count -1 is negative"},
		{"until before first", Task{Topic: "t", After: time.Hour, Every: time.Hour, Until: testNow}, "before the first occurrence"},
		{"recurrence header malformed", Task{Topic: "t", Headers: []kafka.Header{{Key: "delay-every", Value: []byte("often")}}}, `delay-every: "often" is not a Go duration`},
		{"recurrence header and field", Task{Topic: "t", Every: time.Minute, Headers: []kafka.Header{{Key: "delay-every", Value: []byte("1m")}}}, "delay-every: header given more than once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.c.Submit(t.Context(), tt.task)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want ErrInvalid saying %q", err, tt.want)
			}
		})
	}
}

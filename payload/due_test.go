package payload_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/duetest"
)

// dueMessage is the input message of a duetest case: a task for orders,
// recorded at now, with the case's field as its header.
func dueMessage(c duetest.Case, now time.Time) payload.Message {
	kv := []string{payload.HeaderTopic, "orders"}
	switch c.Field {
	case duetest.FieldAt:
		kv = append(kv, payload.HeaderAt, c.Value)
	case duetest.FieldAfter:
		kv = append(kv, payload.HeaderAfter, c.Value)
	case duetest.FieldEvery:
		kv = append(kv, payload.HeaderAfter, "1m", payload.HeaderEvery, c.Value, payload.HeaderCount, "3")
	case duetest.FieldUntil:
		kv = append(kv, payload.HeaderAfter, "1m", payload.HeaderEvery, "1h", payload.HeaderUntil, c.Value)
	case duetest.FieldExpireAfter:
		kv = append(kv, payload.HeaderAfter, "1m", payload.HeaderExpireAfter, c.Value)
	}
	return payload.Message{Topic: "delay-input", Time: now, Value: []byte("v"), Headers: hdr(kv...)}
}

// TestDueTable: the wire decoder's verdicts on the table every front
// door shares (payload/duetest).
func TestDueTable(t *testing.T) {
	now := time.Now()
	for _, c := range duetest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			_, err := payload.Decode(dueMessage(c, now), now, payload.DecodeConfig{MaxDelay: duetest.MaxDelay})
			switch {
			case c.Reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.Reason != "" && (err == nil || !strings.Contains(err.Error(), c.Reason)):
				t.Fatalf("err %v, want a refusal saying %q", err, c.Reason)
			case err != nil && !errors.Is(err, payload.ErrContract):
				t.Fatalf("err %v does not wrap ErrContract", err)
			}
		})
	}
}

func TestParseDelay(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "90", want: 90 * time.Second},
		{in: "1.5", want: 1500 * time.Millisecond},
		{in: "0", want: 0},
		{in: "-0", want: 0},
		{in: "+5s", want: 5 * time.Second},
		{in: "2d", want: 48 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1d30", want: 24*time.Hour + 30*time.Second},
		{in: "100000d", want: 100_000 * 24 * time.Hour},
		{in: "-1s", wantErr: `x: "-1s" is negative`},
		{in: "-2d", wantErr: "is negative"},
		{in: "--1s", wantErr: "is not a Go duration"},
		{in: "+-1s", wantErr: "is negative"},
		{in: "soon", wantErr: `x: "soon" is not a Go duration or seconds (90s, 1h30m, 2d, 1d12h or 90)`},
		{in: "", wantErr: "is not a Go duration"},
		{in: "d", wantErr: "is not a Go duration"},
		{in: "2dd", wantErr: "is not a Go duration"},
		{in: "1.", wantErr: "is not a Go duration"},
		{in: "100001d", wantErr: "out of range"},
		{in: "100000d2562047h", wantErr: "out of range"},
		{in: "99999999999999999999", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := payload.ParseDelay("x", tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("%v, %v; want an error saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("%v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{in: "2030-01-02T03:04:05Z", want: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
		{in: "2030-01-02T03:04:05.123+02:00", want: time.Date(2030, 1, 2, 1, 4, 5, 123_000_000, time.UTC)},
		{in: "2030-01-02", want: time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)},
		{in: "1893553445000", want: time.UnixMilli(1893553445000)},
		{in: "0", want: time.UnixMilli(0)}, // a range may start at the epoch
		{in: "now", want: now},
		{in: " now ", want: now},
		{in: "-1h", want: now.Add(-time.Hour)},
		{in: "+30m", want: now.Add(30 * time.Minute)},
		{in: "-2d", want: now.Add(-48 * time.Hour)},
		{in: "-1d12h", want: now.Add(-36 * time.Hour)},
		{in: "+90", want: now.Add(90 * time.Second)},
		{in: "tomorrow", wantErr: `"tomorrow": not RFC 3339`},
		{in: "", wantErr: "empty"},
		{in: "2030-13-01", wantErr: "not RFC 3339"},
		{in: "2030-01-02T03:04:05", wantErr: "not RFC 3339"}, // no zone
		{in: "-", wantErr: "not RFC 3339"},
		{in: "-x", wantErr: "not RFC 3339"},
		{in: "--1h", wantErr: "not RFC 3339"},
		{in: "+-1h", wantErr: "not RFC 3339"},
		{in: "1969-12-31T23:00:00Z", wantErr: "before 1970"},
		{in: "1969-12-31", wantErr: "before 1970"},
		{in: "99999999999999999999", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := payload.ParseTime(tt.in, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tt.want) {
				t.Fatalf("%v, want %v", got, tt.want)
			}
		})
	}
}

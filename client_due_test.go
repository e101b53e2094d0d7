package delayq

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload/duetest"
)

// TestDueRules: the client refuses, before producing, the due times and
// delays delayd would send to delay-failed: unix seconds read as
// milliseconds (time.UnixMilli(secs)) and a time or delay over MaxDelay.
func TestDueRules(t *testing.T) {
	secs := testNow.Unix()                                 // a 2030 time in unix seconds
	asMs := time.UnixMilli(secs)                           // what time.UnixMilli makes of it: January 1970
	f := newFake(t, Config{})                              // MaxDelay: 720h, delayd's default
	long := newFake(t, Config{MaxDelay: 3000 * time.Hour}) // a delayd with --max-delay 3000h
	tests := []struct {
		name string
		c    *Client
		task Task
		want []string // substrings of the error; none: accepted
	}{
		{name: "At in unix seconds", c: f.c, task: Task{Topic: "t", At: asMs},
			want: []string{"At: 1970-01-", "looks like unix seconds read as milliseconds (time.UnixMilli(" + strconv.FormatInt(secs, 10) + "))", "time.Unix(" + strconv.FormatInt(secs, 10) + ", 0)"}},
		{name: "At at the earliest due time", c: f.c, task: Task{Topic: "t", At: time.UnixMilli(100_000_000_000)}},
		{name: "At just before it", c: f.c, task: Task{Topic: "t", At: time.UnixMilli(99_999_999_999)}, want: []string{"looks like unix seconds"}},
		{name: "At in seconds read right", c: f.c, task: Task{Topic: "t", At: time.Unix(secs, 0).Add(time.Hour)}},
		{name: "Until in unix seconds", c: f.c, task: Task{Topic: "t", After: time.Minute, Every: time.Minute, Until: asMs},
			want: []string{"Until: ", "looks like unix seconds"}},
		{name: "After 2099h", c: f.c, task: Task{Topic: "t", After: 2099 * time.Hour}, want: []string{"After: 2099h0m0s is over the maximum delay 720h0m0s"}},
		{name: "After 720h", c: f.c, task: Task{Topic: "t", After: 720 * time.Hour}},
		{name: "After 2099h under a longer MaxDelay", c: long.c, task: Task{Topic: "t", After: 2099 * time.Hour}},
		{name: "At 31 days ahead", c: f.c, task: Task{Topic: "t", At: testNow.Add(31 * 24 * time.Hour)}, want: []string{"At: due ", "more than the maximum delay 720h0m0s ahead"}},
		{name: "Every over MaxDelay", c: f.c, task: Task{Topic: "t", After: time.Minute, Every: 721 * time.Hour}, want: []string{"delay-every: 721h0m0s is over the maximum delay"}},
		{name: "due now (the Go zero value)", c: f.c, task: Task{Topic: "t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tt.c.Message(tt.task)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not say %q", err, w)
				}
			}
		})
	}

	t.Run("reschedule and cancel", func(t *testing.T) {
		for name, err := range map[string]error{
			"reschedule to unix seconds": f.c.Reschedule(t.Context(), "x", asMs),
			"reschedule past MaxDelay":   f.c.Reschedule(t.Context(), "x", testNow.Add(721*time.Hour)),
			"cancel at unix seconds":     f.c.Cancel(t.Context(), "x", asMs),
			"replace at unix seconds":    func() error { _, err := f.c.Replace(t.Context(), Task{ID: "x", Topic: "t", At: asMs}); return err }(),
		} {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
	})
	if _, err := New(Config{MaxDelay: -time.Hour}); err == nil || !strings.Contains(err.Error(), "MaxDelay -1h0m0s is negative") {
		t.Errorf("New with a negative MaxDelay: %v", err)
	}
}

// TestDueTable: the Go client's verdicts on the table every front door
// shares (payload/duetest), each value as a Go caller would have typed
// it (duetest.Time, duetest.Duration).
func TestDueTable(t *testing.T) {
	f := newFake(t, Config{MaxDelay: duetest.MaxDelay})
	for _, c := range duetest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if c.NotGo {
				t.Skip("not expressible in Go's types")
			}
			task := Task{Topic: "orders", Value: []byte("v")}
			var err error
			switch c.Field {
			case duetest.FieldAt:
				task.At, err = duetest.Time(c.Value)
			case duetest.FieldAfter:
				task.After, err = duetest.Duration(c.Value)
			case duetest.FieldEvery:
				task.After, task.Count = time.Minute, 3
				task.Every, err = duetest.Duration(c.Value)
			case duetest.FieldUntil:
				task.After, task.Every = time.Minute, time.Hour
				task.Until, err = duetest.Time(c.Value)
			case duetest.FieldExpireAfter:
				task.After = time.Minute
				task.ExpireAfter, err = duetest.Duration(c.Value)
			default:
				t.Fatalf("field %q", c.Field)
			}
			if err != nil {
				t.Fatalf("%q is no Go value (mark the case not_go): %v", c.Value, err)
			}
			_, _, err = f.c.Message(task)
			switch {
			case c.Reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.Reason != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.Reason)):
				t.Fatalf("err %v, want ErrInvalid saying %q", err, c.Reason)
			}
		})
	}
}

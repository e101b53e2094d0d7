package delayq

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/wiretest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

func wireTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// TestWireVectors builds the message of each client case of
// testdata/wire/vectors.json with the client's clock at now_ms, without a
// broker, and compares its topic, key and headers (in order) with the
// case's, or its error with the case's reason.
func TestWireVectors(t *testing.T) {
	v := wiretest.Load(t)
	now := time.UnixMilli(v.NowMS).UTC()
	c, err := New(Config{
		MaxDelay:  wiretest.Duration(t, v.MaxDelay),
		SlowAfter: wiretest.Duration(t, v.SlowAfter),
		Input:     v.Input,
		Slow:      v.Slow,
		Now:       func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ops := map[string]int{}
	for _, tc := range v.Client {
		ops[tc.Op]++
		t.Run(tc.Name, func(t *testing.T) {
			if (tc.Want == nil) == (tc.Error == "") {
				t.Fatal("a case has exactly one of want and error")
			}
			task := Task{
				ID: tc.Task.ID, Topic: tc.Task.Topic, At: wireTime(tc.Task.AtMS), After: wiretest.Duration(t, tc.Task.After),
				Key: wiretest.Bytes(tc.Task.Key), Value: wiretest.Bytes(tc.Task.Value),
				Every: wiretest.Duration(t, tc.Task.Every), Cron: tc.Task.Cron, TZ: tc.Task.TZ,
				Until: wireTime(tc.Task.UntilMS), Count: tc.Task.Count, ExpireAfter: wiretest.Duration(t, tc.Task.ExpireAfter),
			}
			for _, h := range tc.Task.Headers {
				task.Headers = append(task.Headers, kafka.Header{Key: h[0], Value: []byte(h[1])})
			}
			var m kafka.Message
			var r Receipt
			switch tc.Op {
			case "submit":
				m, r, err = c.Message(task)
			case "replace":
				m, r, err = c.replaceMessage(task)
			case "cancel":
				m, err = c.cancelMessage(task.ID, task.At)
			case "cancel_by_id":
				m, err = c.cancelByIDMessage(task.ID)
			case "reschedule":
				m, err = c.rescheduleMessage(task.ID, task.At)
			default:
				t.Fatalf("unknown op %q", tc.Op)
			}
			if tc.Error != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.Error) {
					t.Fatalf("err %v, want ErrInvalid saying %q", err, tc.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Topic != tc.Want.Topic {
				t.Errorf("topic %q, want %q", m.Topic, tc.Want.Topic)
			}
			if want := wiretest.Bytes(tc.Want.Key); string(m.Key) != string(want) || (m.Key == nil) != (want == nil) {
				t.Errorf("key %q, want %q", m.Key, want)
			}
			if want := wiretest.Bytes(tc.Task.Value); string(m.Value) != string(want) {
				t.Errorf("value %q, want %q", m.Value, want)
			}
			got := make([][2]string, len(m.Headers))
			for i, h := range m.Headers {
				got[i] = [2]string{h.Key, string(h.Value)}
			}
			if !slices.Equal(got, tc.Want.Headers) {
				t.Errorf("headers\n got %q\nwant %q", got, tc.Want.Headers)
			}
			if !m.Time.Equal(now) {
				t.Errorf("record time %v, want the clock's %v", m.Time, now)
			}
			if r.ID != "" && (r.ID != tc.Task.ID || r.Input != m.Topic) {
				t.Errorf("receipt %+v, want id %q on %s", r, tc.Task.ID, m.Topic)
			}
		})
	}
	for _, op := range []string{"submit", "cancel", "cancel_by_id", "reschedule", "replace"} {
		if ops[op] == 0 {
			t.Errorf("no client case of op %q", op)
		}
	}
	// The file names the contract's values: they must be the client's.
	if v.Input != topics.Input || v.Slow != topics.Slow ||
		wiretest.Duration(t, v.MaxDelay) != payload.DefaultMaxDelay || wiretest.Duration(t, v.SlowAfter) != DefaultSlowAfter {
		t.Errorf("vectors' input %q, slow %q, max_delay %s, slow_after %s: not the client's defaults", v.Input, v.Slow, v.MaxDelay, v.SlowAfter)
	}
}

// A task whose message delayd would refuse for its size is refused before
// anything is written: the bound counts key, value and every header.
func TestMessagePayloadLimit(t *testing.T) {
	c, err := New(Config{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	task := Task{ID: "big", Topic: "orders", After: time.Minute}
	m, _, err := c.Message(task)
	if err != nil {
		t.Fatal(err)
	}
	room := payload.DefaultMaxPayload
	for _, h := range m.Headers {
		room -= len(h.Key) + len(h.Value) + payload.HeaderOverhead
	}
	task.Value = make([]byte, room)
	if _, _, err := c.Message(task); err != nil {
		t.Fatalf("a message of exactly %d bytes: %v", payload.DefaultMaxPayload, err)
	}
	task.Value = make([]byte, room+1)
	if _, _, err := c.Message(task); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "over the 1048576-byte limit") {
		t.Errorf("one byte more: %v, want ErrInvalid over the limit", err)
	}
	if _, _, err := c.replaceMessage(Task{ID: "big", Topic: "orders", After: time.Minute, Value: make([]byte, room)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a replace, whose delay-op makes it over the limit: %v, want ErrInvalid", err)
	}
}

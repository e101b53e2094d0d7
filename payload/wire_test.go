package payload_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/wiretest"
	"github.com/delayq/delayq/payload"
)

// loadWireVectors reads testdata/wire/vectors.json (internal/wiretest)
// and the decoder config of its max_delay.
func loadWireVectors(t *testing.T) (wiretest.Vectors, payload.DecodeConfig) {
	t.Helper()
	v := wiretest.Load(t)
	return v, payload.DecodeConfig{MaxDelay: wiretest.Duration(t, v.MaxDelay)}
}

func wireHeaders(hs [][2]string) []payload.Header {
	var out []payload.Header
	for _, h := range hs {
		out = append(out, payload.Header{Key: h[0], Value: []byte(h[1])})
	}
	return out
}

func headerPairs(hs []payload.Header) [][2]string {
	out := [][2]string{}
	for _, h := range hs {
		out = append(out, [2]string{h.Key, string(h.Value)})
	}
	return out
}

// wireOp names what Decode made of a message as the vectors do.
func wireOp(t payload.Task) string {
	switch {
	case t.Cancel:
		return "cancel"
	case t.Control == payload.ControlCancelID:
		return "cancel_by_id"
	case t.Control == payload.ControlReschedule:
		return "reschedule"
	case t.Control == payload.ControlReplace:
		return "replace"
	}
	return "submit"
}

var wireControl = []string{payload.HeaderTopic, payload.HeaderAt, payload.HeaderAfter, payload.HeaderID, payload.HeaderOp}

// TestWireClientVectors decodes the message each valid client case of
// testdata/wire/vectors.json says a client writes (the Go client's
// TestWireVectors checks it writes exactly that), recorded at now_ms, and
// checks Decode makes the task the case asked for: its op, id, topic, due
// time, key, value, and every header not a control header passed through.
func TestWireClientVectors(t *testing.T) {
	v, cfg := loadWireVectors(t)
	now := time.UnixMilli(v.NowMS)
	for _, tc := range v.Client {
		if tc.Want == nil {
			continue // a refusal of the client: no message
		}
		t.Run(tc.Name, func(t *testing.T) {
			m := payload.Message{Topic: tc.Want.Topic, Key: wiretest.Bytes(tc.Want.Key), Value: wiretest.Bytes(tc.Task.Value),
				Headers: wireHeaders(tc.Want.Headers), Time: now}
			got, err := payload.Decode(m, now, cfg)
			if err != nil {
				t.Fatalf("Decode refuses the client's message: %v", err)
			}
			if op := wireOp(got); op != tc.Op {
				t.Errorf("op %s, want %s", op, tc.Op)
			}
			if got.Name != tc.Task.ID || got.ID != payload.TaskID(tc.Task.ID) {
				t.Errorf("name %q id %d, want %q", got.Name, got.ID, tc.Task.ID)
			}
			stores := tc.Op == "submit" || tc.Op == "replace"
			var execAt int64
			switch {
			case tc.Task.AtMS != 0:
				execAt = tc.Task.AtMS
			case tc.Task.After != "":
				d, err := time.ParseDuration(tc.Task.After)
				if err != nil {
					t.Fatal(err)
				}
				execAt = now.Add(d).UnixMilli()
			case stores:
				execAt = v.NowMS
			}
			if got.ExecAt != execAt {
				t.Errorf("exec_at %d, want %d", got.ExecAt, execAt)
			}
			if !stores {
				if got.Topic != "" || got.Headers != nil || got.Value != nil {
					t.Errorf("op carries topic %q headers %q value %q, want none", got.Topic, got.Headers, got.Value)
				}
				return
			}
			if got.Topic != tc.Task.Topic {
				t.Errorf("topic %q, want %q", got.Topic, tc.Task.Topic)
			}
			if string(got.Key) != string(m.Key) || string(got.Value) != string(m.Value) {
				t.Errorf("key %q value %q, want %q %q", got.Key, got.Value, m.Key, m.Value)
			}
			// Decode keeps the pass-through headers in order and puts the
			// recurrence ones after them in its own order: compare as sets.
			var want [][2]string
			for _, h := range tc.Want.Headers {
				if !slices.Contains(wireControl, h[0]) {
					want = append(want, h)
				}
			}
			if tc.Task.Every != "" || tc.Task.Cron != "" {
				want = append(want, [2]string{payload.HeaderOccurrence, "1"})
			}
			gotHs := headerPairs(got.Headers)
			less := func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) }
			slices.SortFunc(want, less)
			slices.SortFunc(gotHs, less)
			if !slices.Equal(gotHs, want) && !(len(gotHs) == 0 && len(want) == 0) {
				t.Errorf("stored headers %q, want %q", gotHs, want)
			}
		})
	}
}

// TestWireDecodeVectors runs each decode case of testdata/wire/vectors.json,
// raw headers a hand-built producer might send, through Decode at now_ms:
// a valid one must make the task the case names (stored headers exactly,
// in order), a refused one must fail with ErrContract and a reason that
// contains the case's text.
func TestWireDecodeVectors(t *testing.T) {
	v, cfg := loadWireVectors(t)
	now := time.UnixMilli(v.NowMS)
	for _, tc := range v.Decode {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.OK == (tc.Error != "") {
				t.Fatal("a case has exactly one of ok and error")
			}
			m := payload.Message{Topic: "delay-input", Key: wiretest.Bytes(tc.Key), Value: wiretest.Bytes(tc.Value), Headers: wireHeaders(tc.Headers)}
			if tc.RecordMS != 0 {
				m.Time = time.UnixMilli(tc.RecordMS)
			}
			got, err := payload.Decode(m, now, cfg)
			if !tc.OK {
				if !errors.Is(err, payload.ErrContract) || !strings.Contains(err.Error(), tc.Error) {
					t.Fatalf("err %v, want a contract violation saying %q", err, tc.Error)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode refuses: %v", err)
			}
			w := tc.Want
			if op := wireOp(got); op != w.Op || got.Topic != w.Topic || got.ExecAt != w.ExecAtMS ||
				got.Name != w.ID || got.ID != payload.TaskID(w.ID) || got.PastDue != w.PastDue {
				t.Errorf("got op %s topic %q exec_at %d id %q past_due %v, want %s %q %d %q %v",
					op, got.Topic, got.ExecAt, got.Name, got.PastDue, w.Op, w.Topic, w.ExecAtMS, w.ID, w.PastDue)
			}
			want := w.Headers
			if want == nil {
				want = [][2]string{}
			}
			if hs := headerPairs(got.Headers); !slices.Equal(hs, want) {
				t.Errorf("stored headers %q, want %q", hs, want)
			}
			if string(got.Key) != string(m.Key) || string(got.Value) != string(m.Value) {
				t.Errorf("key %q value %q, want %q %q", got.Key, got.Value, m.Key, m.Value)
			}
		})
	}
}

func TestCheckLimits(t *testing.T) {
	at := payload.Header{Key: payload.HeaderAt, Value: []byte("1893456000000")}
	for _, tc := range []struct {
		name string
		m    payload.Message
		want string // "" accepted, else a substring of the reason
	}{
		{"small", payload.Message{Value: []byte("v"), Headers: []payload.Header{at}}, ""},
		{"delay-at twice", payload.Message{Headers: []payload.Header{at, at}}, "delay-at: header given more than once"},
		{"257 headers", payload.Message{Headers: make([]payload.Header, payload.MaxHeaders+1)}, "over the limit of 256"},
		{"1 MiB value and a header", payload.Message{Value: make([]byte, payload.DefaultMaxPayload), Headers: []payload.Header{at}}, "over the 1048576-byte limit"},
	} {
		err := payload.CheckLimits(tc.m)
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, payload.ErrContract) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

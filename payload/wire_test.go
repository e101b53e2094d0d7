package payload_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// wireVectors is ../testdata/wire/vectors.json (format:
// testdata/wire/README.md), the cases the Go client's TestWireVectors
// builds messages from and every other client is tested against.
type wireVectors struct {
	Version  int    `json:"version"`
	NowMS    int64  `json:"now_ms"`
	MaxDelay string `json:"max_delay"`
	Client   []struct {
		Name string `json:"name"`
		Op   string `json:"op"`
		Task struct {
			ID    string  `json:"id"`
			Topic string  `json:"topic"`
			AtMS  int64   `json:"at_ms"`
			After string  `json:"after"`
			Value *string `json:"value"`
			Every string  `json:"every"`
			Cron  string  `json:"cron"`
		} `json:"task"`
		Want *struct {
			Topic   string      `json:"topic"`
			Key     *string     `json:"key"`
			Headers [][2]string `json:"headers"`
		} `json:"want"`
	} `json:"client"`
	Decode []struct {
		Name     string      `json:"name"`
		Headers  [][2]string `json:"headers"`
		RecordMS int64       `json:"record_ms"`
		Key      *string     `json:"key"`
		Value    *string     `json:"value"`
		OK       bool        `json:"ok"`
		Want     struct {
			Op       string      `json:"op"`
			Topic    string      `json:"topic"`
			ExecAtMS int64       `json:"exec_at_ms"`
			ID       string      `json:"id"`
			PastDue  bool        `json:"past_due"`
			Headers  [][2]string `json:"headers"`
		} `json:"want"`
		Error string `json:"error"`
	} `json:"decode"`
}

func loadWireVectors(t *testing.T) (wireVectors, payload.DecodeConfig) {
	t.Helper()
	b, err := os.ReadFile("../testdata/wire/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v wireVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("testdata/wire/vectors.json: %v", err)
	}
	if v.Version != 1 || len(v.Client) == 0 || len(v.Decode) == 0 {
		t.Fatalf("testdata/wire/vectors.json: version %d, %d client and %d decode cases", v.Version, len(v.Client), len(v.Decode))
	}
	max, err := time.ParseDuration(v.MaxDelay)
	if err != nil {
		t.Fatalf("max_delay: %v", err)
	}
	return v, payload.DecodeConfig{MaxDelay: max}
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

func wireBytes(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
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
			m := payload.Message{Topic: tc.Want.Topic, Key: wireBytes(tc.Want.Key), Value: wireBytes(tc.Task.Value),
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
			m := payload.Message{Topic: "delay-input", Key: wireBytes(tc.Key), Value: wireBytes(tc.Value), Headers: wireHeaders(tc.Headers)}
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

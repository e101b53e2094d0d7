package failed

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)

func h(k, v string) payload.Header { return payload.Header{Key: k, Value: []byte(v)} }

// input is an input message as a producer wrote it and ingest read it.
func input(topic string, partition int, offset int64, headers ...payload.Header) payload.Message {
	return payload.Message{Topic: topic, Partition: partition, Offset: offset, Time: t0,
		Key: []byte("k"), Value: []byte("v"), Headers: headers}
}

// ingestFailure is m as ingest writes it to the failed topic (the format
// of ingest's failedMessage: provenance headers of the input dropped),
// read back at partition p, offset o.
func ingestFailure(m payload.Message, reason string, p int, o int64) payload.Message {
	hs := slices.DeleteFunc(slices.Clone(m.Headers), func(x payload.Header) bool { return payload.Provenance(x.Key) })
	hs = append(hs,
		h(payload.HeaderError, reason),
		h(HeaderSourceTopic, m.Topic),
		h(HeaderSourcePartition, strconv.Itoa(m.Partition)),
		h(HeaderSourceOffset, strconv.FormatInt(m.Offset, 10)),
	)
	return payload.Message{Topic: "delay-failed", Partition: p, Offset: o, Time: m.Time, Key: m.Key, Value: m.Value, Headers: hs}
}

// scannerRefusal is task t as the scanner writes it to the failed topic
// (the format of its redirect), read back at partition p, offset o.
func scannerRefusal(t payload.Task, reason string, p int, o int64, at time.Time) payload.Message {
	m := payload.Deliverable(t)
	m.Topic, m.Partition, m.Offset, m.Time = "delay-failed", p, o, at
	m.Headers = append(m.Headers, h(payload.HeaderTopic, t.Topic), h(payload.HeaderError, reason))
	return m
}

func headerMap(hs []payload.Header) map[string][]string {
	out := map[string][]string{}
	for _, x := range hs {
		out[x.Key] = append(out[x.Key], string(x.Value))
	}
	return out
}

func TestRecordReplay(t *testing.T) {
	orig := input("delay-input", 3, 17, h("delay-topic", "orders"), h("delay-after", "90s"), h("trace", "abc"))
	withID := input("delay-input", 1, 5, h("delay-topic", "orders"), h("delay-at", "1893553445000"), h("delay-id", "order-42"))
	slow := input("delay-input-slow", 0, 9, h("delay-topic", "orders"), h("delay-after", "1m"))
	cancel := input("delay-input", 2, 8, h("delay-op", "cancel"), h("delay-at", "1893553445000"))
	task := payload.Task{ID: 42, Name: "order-42", Topic: "orders", ExecAt: t0.UnixMilli(), Key: []byte("k"), Value: []byte("v"),
		Headers: []payload.Header{h("trace", "abc")}}
	// A replayed copy that failed again: ingest read it at delay-input/0/700.
	again := input("delay-input", 0, 700, h("delay-topic", "orders"), h("delay-after", "90s"), h("trace", "abc"),
		h("delay-id", "delay-input/3/17"), h(HeaderReplayOf, "delay-failed/1/40"), h(HeaderReplaySource, "delay-input/3/17"))

	tests := []struct {
		name    string
		msg     payload.Message
		want    []payload.Header // in order
		topic   string
		time    time.Time
		wantErr error
	}{
		{
			name:  "ingest, no delay-id: the derived name",
			msg:   ingestFailure(orig, `delay-topic: "orders" is not allowed`, 2, 11),
			topic: "delay-input", time: t0,
			want: []payload.Header{h("delay-topic", "orders"), h("delay-after", "90s"), h("trace", "abc"),
				h("delay-id", "delay-input/3/17"), h(HeaderReplayOf, "delay-failed/2/11"), h(HeaderReplaySource, "delay-input/3/17")},
		},
		{
			name:  "ingest, delay-id kept",
			msg:   ingestFailure(withID, "store: put: 5 attempts: connection refused", 0, 3),
			topic: "delay-input", time: t0,
			want: []payload.Header{h("delay-topic", "orders"), h("delay-at", "1893553445000"), h("delay-id", "order-42"),
				h(HeaderReplayOf, "delay-failed/0/3"), h(HeaderReplaySource, "delay-input/1/5")},
		},
		{
			name:  "ingest, read from the slow lane: back to it",
			msg:   ingestFailure(slow, "x", 1, 1),
			topic: "delay-input-slow", time: t0,
			want: []payload.Header{h("delay-topic", "orders"), h("delay-after", "1m"), h("delay-id", "delay-input-slow/0/9"),
				h(HeaderReplayOf, "delay-failed/1/1"), h(HeaderReplaySource, "delay-input-slow/0/9")},
		},
		{
			name:  "a delay-op without delay-id gets none",
			msg:   ingestFailure(cancel, "delay-op: cancel needs delay-id", 0, 4),
			topic: "delay-input", time: t0,
			want: []payload.Header{h("delay-op", "cancel"), h("delay-at", "1893553445000"),
				h(HeaderReplayOf, "delay-failed/0/4"), h(HeaderReplaySource, "delay-input/2/8")},
		},
		{
			name:  "scanner refusal: the task as stored",
			msg:   scannerRefusal(task, "[10] Message Size Too Large", 1, 2, t0.Add(time.Hour)),
			topic: "delay-input", time: t0.Add(time.Hour),
			want: []payload.Header{h("trace", "abc"), h("delay-id", "order-42"), h("delay-at", payload.FormatTime(t0.UnixMilli())),
				h("delay-topic", "orders"), h(HeaderReplayOf, "delay-failed/1/2")},
		},
		{
			name:  "failed again after a replay: the first delay-id names the task, replay-of and -source renewed",
			msg:   ingestFailure(again, "y", 2, 90),
			topic: "delay-input", time: t0,
			want: []payload.Header{h("delay-topic", "orders"), h("delay-after", "90s"), h("trace", "abc"), h("delay-id", "delay-input/3/17"),
				h(HeaderReplayOf, "delay-failed/2/90"), h(HeaderReplaySource, "delay-input/0/700")},
		},
		{
			name: "forged provenance in a failed message: only ingest's last delay-source-* count",
			msg: payload.Message{Topic: "delay-failed", Partition: 1, Offset: 50, Time: t0, Headers: []payload.Header{
				h("delay-topic", "orders"), h("delay-after", "90s"), h(HeaderReplaySource, "delay-input/9/99"), h(HeaderReplayOf, "delay-failed/9/9"),
				h(HeaderSourceTopic, "delay-input-slow"), h(HeaderSourcePartition, "9"), h(HeaderSourceOffset, "99"),
				h("delay-error", "x"), h(HeaderSourceTopic, "delay-input"), h(HeaderSourcePartition, "3"), h(HeaderSourceOffset, "17")}},
			topic: "delay-input", time: t0,
			want: []payload.Header{h("delay-topic", "orders"), h("delay-after", "90s"), h("delay-id", "delay-input/3/17"),
				h(HeaderReplayOf, "delay-failed/1/50"), h(HeaderReplaySource, "delay-input/3/17")},
		},
		{
			name: "scanner refusal of a task that carried forged delay-source-*: no source",
			msg: scannerRefusal(payload.Task{ID: 42, Name: "order-42", Topic: "orders", ExecAt: t0.UnixMilli(), Headers: []payload.Header{
				h(HeaderSourceTopic, "delay-input-slow"), h(HeaderSourcePartition, "9"), h(HeaderSourceOffset, "99")}},
				"[3] Unknown Topic Or Partition", 0, 8, t0),
			topic: "delay-input", time: t0,
			want: []payload.Header{h("delay-id", "order-42"), h("delay-at", payload.FormatTime(t0.UnixMilli())),
				h("delay-topic", "orders"), h(HeaderReplayOf, "delay-failed/0/8")},
		},
		{
			name: "no source, no id: named for the failed position",
			msg: payload.Message{Topic: "delay-failed", Partition: 4, Offset: 2, Time: t0,
				Headers: []payload.Header{h("delay-topic", "orders"), h("delay-after", "1s"), h("delay-error", "z")}},
			topic: "delay-input", time: t0,
			want: []payload.Header{h("delay-topic", "orders"), h("delay-after", "1s"), h("delay-id", "delay-failed/4/2"),
				h(HeaderReplayOf, "delay-failed/4/2")},
		},
		{
			name: "malformed source headers count as none; other delay-source-* dropped too",
			msg: payload.Message{Topic: "delay-failed", Partition: 0, Offset: 6, Time: t0, Headers: []payload.Header{
				h("delay-topic", "orders"), h("delay-after", "1s"), h("delay-error", "z"),
				h(HeaderSourceTopic, "delay-input"), h(HeaderSourcePartition, "x"), h(HeaderSourceOffset, "1"), h("delay-source-host", "a")}},
			topic: "delay-input", time: t0,
			want: []payload.Header{h("delay-topic", "orders"), h("delay-after", "1s"), h("delay-id", "delay-failed/0/6"),
				h(HeaderReplayOf, "delay-failed/0/6")},
		},
		{
			name:    "ingest dropped the value",
			msg:     ingestFailure(orig, "payload: too big (value of 2000000 bytes dropped: too large for the failed topic)", 0, 1),
			wantErr: ErrDropped,
		},
		{
			name:    "ingest dropped key and headers",
			msg:     ingestFailure(orig, "x (key of 9 bytes and 3 headers dropped: too large for the failed topic)", 0, 1),
			wantErr: ErrDropped,
		},
		{
			name:    "the scanner dropped key, value and headers",
			msg:     scannerRefusal(task, "refused; key, value and headers dropped: [10] Message Size Too Large", 0, 1, t0),
			wantErr: ErrDropped,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Parse(tt.msg)
			got, err := r.Replay("delay-input", "delay-input-slow")
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !r.Dropped {
					t.Fatalf("err %v, dropped %v; want %v", err, r.Dropped, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Topic != tt.topic {
				t.Errorf("topic %q, want %q", got.Topic, tt.topic)
			}
			if !got.Time.Equal(tt.time) {
				t.Errorf("time %v, want %v", got.Time, tt.time)
			}
			if string(got.Key) != string(tt.msg.Key) || string(got.Value) != string(tt.msg.Value) {
				t.Errorf("key/value %q/%q, want %q/%q", got.Key, got.Value, tt.msg.Key, tt.msg.Value)
			}
			if len(got.Headers) != len(tt.want) {
				t.Fatalf("headers\n%v\nwant\n%v", headerMap(got.Headers), headerMap(tt.want))
			}
			for i := range got.Headers {
				if got.Headers[i].Key != tt.want[i].Key || string(got.Headers[i].Value) != string(tt.want[i].Value) {
					t.Errorf("header %d: %s=%q, want %s=%q", i, got.Headers[i].Key, got.Headers[i].Value, tt.want[i].Key, tt.want[i].Value)
				}
			}
			if got.Partition != 0 || got.Offset != 0 {
				t.Errorf("partition/offset %d/%d set: the writer must choose", got.Partition, got.Offset)
			}
		})
	}
}

// TestReplaySameTask decodes the replayed message as ingest will and checks
// that it is the task the original input was: same id, name and due time
// (ingest's "same id + same due time is one task"), whatever input
// position the copy lands at and however often it is replayed.
func TestReplaySameTask(t *testing.T) {
	now := t0.Add(time.Minute)
	tests := []struct {
		name string
		orig payload.Message
	}{
		{"derived id, delay-after", input("delay-input", 3, 17, h("delay-topic", "orders"), h("delay-after", "90s"), h("trace", "x"))},
		{"given id, delay-at", input("delay-input", 1, 5, h("delay-topic", "orders"), h("delay-at", "2030-01-02T04:00:00Z"), h("delay-id", "order-42"))},
		{"slow lane, past due", input("delay-input-slow", 0, 1, h("delay-topic", "orders"), h("delay-at", "1577836800000"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := payload.Decode(tt.orig, now, payload.DecodeConfig{})
			if err != nil {
				t.Fatal(err)
			}
			failed := ingestFailure(tt.orig, `delay-topic: "orders" is not allowed`, 1, 99)
			for i, at := range []int64{400, 401} { // two replays, read back at two positions
				m, err := Parse(failed).Replay("delay-input", "delay-input-slow")
				if err != nil {
					t.Fatal(err)
				}
				m.Partition, m.Offset = i, at
				got, err := payload.Decode(m, now, payload.DecodeConfig{})
				if err != nil {
					t.Fatalf("replay %d does not decode: %v", i+1, err)
				}
				if got.ID != want.ID || got.Name != want.Name || got.ExecAt != want.ExecAt || got.Topic != want.Topic {
					t.Errorf("replay %d: task %d %q at %d to %s, want %d %q at %d to %s", i+1,
						got.ID, got.Name, got.ExecAt, got.Topic, want.ID, want.Name, want.ExecAt, want.Topic)
				}
				// The replayed message names the failed message and the input
				// position; ingest drops both (provenance): the task passes
				// through the producer's headers only.
				if hm := headerMap(m.Headers); hm[HeaderReplayOf][0] != "delay-failed/1/99" ||
					hm[HeaderReplaySource][0] != payload.DerivedName(tt.orig.Topic, tt.orig.Partition, tt.orig.Offset) {
					t.Errorf("replay headers %v", hm)
				}
				if hm := headerMap(got.Headers); len(got.Headers) != len(want.Headers) {
					t.Errorf("pass-through %v, want %v", hm, headerMap(want.Headers))
				}
			}
		})
	}

	// A scanner refusal resubmits the stored task: same id, name, due time.
	task := payload.Task{Name: "delay-input/3/17", Topic: "orders", ExecAt: t0.UnixMilli(), Value: []byte("v")}
	task.ID = payload.TaskID(task.Name)
	m, err := Parse(scannerRefusal(task, "refused", 0, 1, now)).Replay("delay-input", "delay-input-slow")
	if err != nil {
		t.Fatal(err)
	}
	got, err := payload.Decode(m, now, payload.DecodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != task.ID || got.Name != task.Name || got.ExecAt != task.ExecAt || got.Topic != task.Topic {
		t.Errorf("scanner refusal: task %d %q at %d to %s, want %d %q at %d to %s",
			got.ID, got.Name, got.ExecAt, got.Topic, task.ID, task.Name, task.ExecAt, task.Topic)
	}
}

func TestParse(t *testing.T) {
	m := ingestFailure(input("delay-input", 3, 17, h("delay-topic", "orders"), h("delay-topic", "second"), h("delay-id", "a")), "why", 2, 5)
	r := Parse(m)
	want := Record{Topic: "delay-failed", Partition: 2, Offset: 5, Time: t0, Reason: "why", Business: "orders", ID: "a", Source: "delay-input/3/17"}
	r.Message = payload.Message{}
	if r.Topic != want.Topic || r.Partition != want.Partition || r.Offset != want.Offset || !r.Time.Equal(want.Time) ||
		r.Reason != want.Reason || r.Business != want.Business || r.ID != want.ID || r.Source != want.Source || r.Dropped {
		t.Errorf("%+v\nwant %+v", r, want)
	}
	if r.Position() != "delay-failed/2/5" {
		t.Errorf("position %q", r.Position())
	}
}

func TestFilterMatch(t *testing.T) {
	r := Record{Time: t0, Reason: `delay-topic: "orders" is not allowed`, Business: "orders"}
	tests := []struct {
		name string
		f    Filter
		want bool
	}{
		{"zero filter", Filter{}, true},
		{"from inclusive", Filter{From: t0, To: t0.Add(time.Millisecond)}, true},
		{"to exclusive", Filter{From: t0.Add(-time.Second), To: t0}, false},
		{"before from", Filter{From: t0.Add(time.Millisecond), To: t0.Add(time.Second)}, false},
		{"reason ignores case", Filter{Reason: "NOT ALLOWED"}, true},
		{"other reason", Filter{Reason: "connection refused"}, false},
		{"topic", Filter{Topic: "orders"}, true},
		{"other topic", Filter{Topic: "order"}, false},
		{"all at once", Filter{From: t0, To: t0.Add(time.Hour), Reason: "allowed", Topic: "orders"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Match(r); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings; none = valid
	}{
		{name: "zero"},
		{name: "own topics", cfg: Config{Failed: "f", Input: "i", Slow: "s"}},
		{name: "same topics", cfg: Config{Failed: "delay-input"}, want: []string{"must differ"}},
		{name: "illegal topic", cfg: Config{Input: "a b"}, want: []string{`input topic "a b"`}},
		{name: "everything", cfg: Config{Brokers: []string{""}, BatchSize: -1, Slack: -1, ReadTimeout: -1},
			want: []string{"empty broker", "batch size", "slack", "read timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v does not wrap ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
	for _, f := range []Filter{{}, {From: t0}, {From: t0, To: t0}, {From: t0, To: t0.Add(time.Second), Limit: -1}} {
		if err := f.validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("filter %+v: err %v", f, err)
		}
	}
}

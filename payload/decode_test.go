package payload_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

var (
	now     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	msgTime = now.Add(-10 * time.Second)
)

func hdr(kv ...string) []payload.Header {
	hs := make([]payload.Header, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		hs = append(hs, payload.Header{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return hs
}

func input(kv ...string) payload.Message {
	return payload.Message{
		Topic: "delay-input", Partition: 3, Offset: 1234, Time: msgTime,
		Key: []byte("k"), Value: []byte("v"), Headers: hdr(kv...),
	}
}

const derived = "delay-input/3/1234"

// pastDue marks a task whose delay-at was past at submit.
func pastDue(t *payload.Task) { t.PastDue = true }

func want(name string, execAt time.Time, mod ...func(*payload.Task)) payload.Task {
	t := payload.Task{
		ID: payload.TaskID(name), Name: name, Topic: "orders", ExecAt: execAt.UnixMilli(),
		Key: []byte("k"), Value: []byte("v"),
	}
	for _, m := range mod {
		m(&t)
	}
	return t
}

func TestDecode(t *testing.T) {
	at := now.Add(5 * time.Minute)
	tests := []struct {
		name    string
		msg     payload.Message
		cfg     payload.DecodeConfig
		want    payload.Task
		wantErr string // substring of the reason; "" = success
	}{
		// Time formats.
		{name: "at RFC 3339", msg: input("delay-topic", "orders", "delay-at", "2026-03-01T12:05:00Z"), want: want(derived, at)},
		{name: "at RFC 3339 offset and fraction", msg: input("delay-topic", "orders", "delay-at", "2026-03-01T13:05:00.123+01:00"),
			want: want(derived, at.Add(123*time.Millisecond))},
		{name: "at RFC 3339 nanoseconds truncate to ms", msg: input("delay-topic", "orders", "delay-at", "2026-03-01T12:05:00.123999999Z"),
			want: want(derived, at.Add(123*time.Millisecond))},
		{name: "at unix ms", msg: input("delay-topic", "orders", "delay-at", "1772366700000"), want: want(derived, at)},
		{name: "at in the past is due at once", msg: input("delay-topic", "orders", "delay-at", "2020-01-01T00:00:00Z"),
			want: want(derived, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), pastDue)},
		{name: "at the earliest due time is due at once", msg: input("delay-topic", "orders", "delay-at", "100000000000"), want: want(derived, time.UnixMilli(payload.MinDueTime), pastDue)},
		{name: "at RFC 3339 at the earliest due time", msg: input("delay-topic", "orders", "delay-at", "1973-03-03T09:46:40Z"), want: want(derived, time.UnixMilli(payload.MinDueTime), pastDue)},
		{name: "after in days", msg: input("delay-topic", "orders", "delay-after", "2d"), want: want(derived, msgTime.Add(48*time.Hour))},
		{name: "after in days and hours", msg: input("delay-topic", "orders", "delay-after", "1d12h"), want: want(derived, msgTime.Add(36*time.Hour))},
		{name: "after with a plus sign", msg: input("delay-topic", "orders", "delay-after", "+5s"), want: want(derived, msgTime.Add(5*time.Second))},
		{name: "at exactly max delay", msg: input("delay-topic", "orders", "delay-at", "2026-03-31T12:00:00Z"), want: want(derived, now.Add(720*time.Hour))},
		{name: "after Go duration", msg: input("delay-topic", "orders", "delay-after", "1h30m"), want: want(derived, msgTime.Add(90*time.Minute))},
		{name: "after plain seconds", msg: input("delay-topic", "orders", "delay-after", "90"), want: want(derived, msgTime.Add(90*time.Second))},
		{name: "after fractional seconds", msg: input("delay-topic", "orders", "delay-after", "1.5"), want: want(derived, msgTime.Add(1500*time.Millisecond))},
		{name: "after zero", msg: input("delay-topic", "orders", "delay-after", "0"), want: want(derived, msgTime)},
		{name: "after minus zero", msg: input("delay-topic", "orders", "delay-after", "-0"), want: want(derived, msgTime)},
		{name: "after max delay", msg: input("delay-topic", "orders", "delay-after", "720h"), want: want(derived, msgTime.Add(720*time.Hour))},
		{name: "custom max delay", cfg: payload.DecodeConfig{MaxDelay: time.Hour},
			msg: input("delay-topic", "orders", "delay-after", "59m"), want: want(derived, msgTime.Add(59*time.Minute))},

		// Names and headers.
		{name: "delay-id string", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-id", "order-42"), want: want("order-42", at)},
		{name: "delay-id snowflake", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-id", "1234567890123456789"),
			want: want("1234567890123456789", at, func(t *payload.Task) { t.ID = 1234567890123456789 })},
		{name: "delay-id max length", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-id", strings.Repeat("x", 128)),
			want: want(strings.Repeat("x", 128), at)},
		{name: "pass-through headers keep order, control headers go",
			msg: input("a", "1", "delay-topic", "orders", "b", "2", "delay-at", "1772366700000", "delay-error", "old",
				"delay-foo", "kept", "a", "3", "Delay-Id", "kept"),
			want: want(derived, at, func(t *payload.Task) {
				t.Headers = hdr("a", "1", "b", "2", "delay-foo", "kept", "a", "3", "Delay-Id", "kept")
			})},
		{name: "allowed topic", cfg: payload.DecodeConfig{AllowTopic: func(s string) bool { return s == "orders" }},
			msg: input("delay-topic", "orders", "delay-at", "1772366700000"), want: want(derived, at)},
		{name: "payload at the limit", cfg: payload.DecodeConfig{MaxPayload: 2 + len("delay-topic") + 6 + len("delay-at") + 13 + 2*payload.HeaderOverhead},
			msg: input("delay-topic", "orders", "delay-at", "1772366700000"), want: want(derived, at)},
		{name: "cancel", msg: input("delay-op", "cancel", "delay-id", "order-42", "delay-at", "1772366700000", "x", "y"),
			want: payload.Task{ID: payload.TaskID("order-42"), Name: "order-42", ExecAt: at.UnixMilli(), Cancel: true}},
		{name: "cancel with topic", msg: input("delay-op", "cancel", "delay-id", "order-42", "delay-at", "1772366700000", "delay-topic", "orders"),
			want: payload.Task{ID: payload.TaskID("order-42"), Name: "order-42", Topic: "orders", ExecAt: at.UnixMilli(), Cancel: true}},

		{name: "cancel by id alone", msg: input("delay-op", "cancel", "delay-id", "order-42", "x", "y"),
			want: payload.Task{ID: payload.TaskID("order-42"), Name: "order-42", Control: payload.ControlCancelID}},
		{name: "reschedule at", msg: input("delay-op", "reschedule", "delay-id", "order-42", "delay-at", "1772366700000", "delay-topic", "orders", "x", "y"),
			want: payload.Task{ID: payload.TaskID("order-42"), Name: "order-42", ExecAt: at.UnixMilli(), Control: payload.ControlReschedule}},
		{name: "reschedule after", msg: input("delay-op", "reschedule", "delay-id", "order-42", "delay-after", "90s"),
			want: payload.Task{ID: payload.TaskID("order-42"), Name: "order-42", ExecAt: msgTime.Add(90 * time.Second).UnixMilli(), Control: payload.ControlReschedule}},

		{name: "replace", msg: input("delay-op", "replace", "delay-id", "order-42", "delay-topic", "orders", "delay-after", "90s", "x", "y"),
			want: payload.Task{ID: payload.TaskID("order-42"), Name: "order-42", Topic: "orders", ExecAt: msgTime.Add(90 * time.Second).UnixMilli(),
				Key: []byte("k"), Value: []byte("v"), Headers: hdr("x", "y"), Control: payload.ControlReplace}},

		// Every reason.
		{name: "topic missing", msg: input("delay-at", "1772366700000"), wantErr: "delay-topic: missing"},
		{name: "topic empty", msg: input("delay-topic", "", "delay-at", "1772366700000"), wantErr: "delay-topic: empty"},
		{name: "topic illegal", msg: input("delay-topic", "bad topic!", "delay-at", "1772366700000"), wantErr: `delay-topic: "bad topic!" is not a legal Kafka topic name`},
		{name: "topic too long", msg: input("delay-topic", strings.Repeat("t", 250), "delay-at", "1772366700000"), wantErr: "is not a legal Kafka topic name"},
		{name: "topic internal __", msg: input("delay-topic", "__consumer_offsets", "delay-at", "1772366700000"), wantErr: "is an internal topic"},
		{name: "topic internal delayq", msg: input("delay-topic", "delay-scan", "delay-at", "1772366700000"), wantErr: `delay-topic: "delay-scan" is an internal topic`},
		{name: "topic internal despite allow-list", cfg: payload.DecodeConfig{AllowTopic: func(string) bool { return true }},
			msg: input("delay-topic", "delay-input", "delay-at", "1772366700000"), wantErr: "is an internal topic"},
		{name: "topic not allowed", cfg: payload.DecodeConfig{AllowTopic: func(s string) bool { return s == "payments" }},
			msg: input("delay-topic", "orders", "delay-at", "1772366700000"), wantErr: `delay-topic: "orders" is not allowed`},
		{name: "when missing", msg: input("delay-topic", "orders"), wantErr: "delay-at or delay-after is required"},
		{name: "at and after", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-after", "1s"), wantErr: "give exactly one, not both"},
		{name: "at garbage", msg: input("delay-topic", "orders", "delay-at", "tomorrow"), wantErr: `delay-at: "tomorrow" is not RFC 3339 or unix ms`},
		{name: "at empty", msg: input("delay-topic", "orders", "delay-at", ""), wantErr: "is not RFC 3339 or unix ms"},
		{name: "at negative ms", msg: input("delay-topic", "orders", "delay-at", "-1"), wantErr: "is not RFC 3339 or unix ms"},
		{name: "at date only", msg: input("delay-topic", "orders", "delay-at", "2026-03-01"), wantErr: "is not RFC 3339 or unix ms"},
		{name: "at ms overflow", msg: input("delay-topic", "orders", "delay-at", "99999999999999999999"), wantErr: "is out of range for unix ms"},
		{name: "at before 1970", msg: input("delay-topic", "orders", "delay-at", "1969-12-31T23:59:59Z"), wantErr: "is at or before the unix epoch"},
		{name: "at unix seconds (kcat with $(date +%s))", msg: input("delay-topic", "orders", "delay-at", "1795829478"),
			wantErr: "delay-at: 1795829478 looks like unix seconds; delay-at is unix milliseconds (1795829478000)"},
		{name: "at one ms after the epoch", msg: input("delay-topic", "orders", "delay-at", "1"), wantErr: "delay-at: 1 looks like unix seconds"},
		{name: "at one ms before the earliest due time", msg: input("delay-topic", "orders", "delay-at", "99999999999"), wantErr: "looks like unix seconds"},
		{name: "at RFC 3339 just after the epoch", msg: input("delay-topic", "orders", "delay-at", "1970-01-01T00:00:00.001Z"),
			wantErr: `delay-at: "1970-01-01T00:00:00.001Z" is before 1973-03-03T09:46:40.000Z, the earliest due time accepted`},
		{name: "cancel at unix seconds", msg: input("delay-op", "cancel", "delay-id", "x", "delay-at", "1795829478"), wantErr: "delay-at: 1795829478 looks like unix seconds"},
		{name: "reschedule to unix seconds", msg: input("delay-op", "reschedule", "delay-id", "x", "delay-at", "1795829478"), wantErr: "delay-at: 1795829478 looks like unix seconds"},
		{name: "replace at unix seconds", msg: input("delay-op", "replace", "delay-id", "x", "delay-topic", "orders", "delay-at", "1795829478"), wantErr: "delay-at: 1795829478 looks like unix seconds"},
		{name: "after in days over the maximum delay", msg: input("delay-topic", "orders", "delay-after", "31d"), wantErr: "delay-after: 744h0m0s is over the maximum delay 720h0m0s"},
		{name: "after 2099h over the maximum delay", msg: input("delay-topic", "orders", "delay-after", "2099h"), wantErr: "delay-after: 2099h0m0s is over the maximum delay 720h0m0s"},
		{name: "after days overflow", msg: input("delay-topic", "orders", "delay-after", "100001d"), wantErr: "is out of range"},
		{name: "after days and a huge rest", msg: input("delay-topic", "orders", "delay-after", "100000d2562047h"), wantErr: "is out of range"},
		{name: "after a lone d", msg: input("delay-topic", "orders", "delay-after", "d"), wantErr: "is not a Go duration or seconds"},
		{name: "after days after hours", msg: input("delay-topic", "orders", "delay-after", "1h2d"), wantErr: "is not a Go duration or seconds"},
		{name: "after negative days", msg: input("delay-topic", "orders", "delay-after", "-2d"), wantErr: `delay-after: "-2d" is negative`},
		{name: "at unix ms zero", msg: input("delay-topic", "orders", "delay-at", "0"),
			wantErr: `delay-at: "0" is at or before the unix epoch (1970-01-01T00:00:00Z)`},
		{name: "at unix ms zero padded", msg: input("delay-topic", "orders", "delay-at", "0000"), wantErr: "is at or before the unix epoch"},
		{name: "at RFC 3339 epoch", msg: input("delay-topic", "orders", "delay-at", "1970-01-01T00:00:00Z"), wantErr: "is at or before the unix epoch"},
		{name: "at RFC 3339 epoch with offset", msg: input("delay-topic", "orders", "delay-at", "1970-01-01T01:00:00+01:00"), wantErr: "is at or before the unix epoch"},
		{name: "cancel at the epoch", msg: input("delay-op", "cancel", "delay-id", "x", "delay-at", "0"), wantErr: "is at or before the unix epoch"},
		{name: "at past max delay", msg: input("delay-topic", "orders", "delay-at", "2026-03-31T12:00:00.001Z"),
			wantErr: "delay-at: due 2026-03-31T12:00:00.001Z, more than the maximum delay 720h0m0s ahead"},
		{name: "at far future ms", msg: input("delay-topic", "orders", "delay-at", "9223372036854775807"), wantErr: "more than the maximum delay"},
		{name: "after garbage", msg: input("delay-topic", "orders", "delay-after", "soon"), wantErr: `delay-after: "soon" is not a Go duration or seconds`},
		{name: "after seconds with exponent", msg: input("delay-topic", "orders", "delay-after", "1e3"), wantErr: "is not a Go duration or seconds"},
		{name: "after negative duration", msg: input("delay-topic", "orders", "delay-after", "-5s"), wantErr: `delay-after: "-5s" is negative`},
		{name: "after negative seconds", msg: input("delay-topic", "orders", "delay-after", "-5"), wantErr: `delay-after: "-5" is negative`},
		{name: "after seconds overflow", msg: input("delay-topic", "orders", "delay-after", "99999999999999999999"), wantErr: "is out of range"},
		{name: "after past max delay", msg: input("delay-topic", "orders", "delay-after", "721h"), wantErr: "delay-after: 721h0m0s is over the maximum delay 720h0m0s"},
		{name: "after without a record timestamp", msg: func() payload.Message {
			m := input("delay-topic", "orders", "delay-after", "10s")
			m.Time = time.Time{} // what kafka-go reads for timestamp 0 or -1
			return m
		}(), wantErr: "delay-after needs a record timestamp (producer sent none); set one or use delay-at"},
		{name: "after with a record timestamp at the epoch", msg: func() payload.Message {
			m := input("delay-topic", "orders", "delay-after", "10s")
			m.Time = time.UnixMilli(0)
			return m
		}(), wantErr: "delay-after needs a record timestamp"},
		{name: "after with a record timestamp before the epoch", msg: func() payload.Message {
			m := input("delay-topic", "orders", "delay-after", "0")
			m.Time = time.UnixMilli(-1)
			return m
		}(), wantErr: "delay-after needs a record timestamp"},
		{name: "after from a record timestamp at the end of time", msg: func() payload.Message {
			m := input("delay-topic", "orders", "delay-after", "720h")
			m.Time = time.UnixMilli(1<<63 - 1)
			return m
		}(), wantErr: `delay-after: "720h" after the record timestamp is out of range`},
		{name: "after past max delay from a future message time", msg: func() payload.Message {
			m := input("delay-topic", "orders", "delay-after", "720h")
			m.Time = now.Add(time.Minute)
			return m
		}(), wantErr: "delay-after: due 2026-03-31T12:01:00.000Z, more than the maximum delay"},
		{name: "id empty", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-id", ""), wantErr: "delay-id: empty"},
		{name: "id too long", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-id", strings.Repeat("x", 129)),
			wantErr: "delay-id: 129 bytes, over the 128-byte limit"},
		{name: "op unknown", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-op", "delete"), wantErr: `delay-op: unknown op "delete" (want "cancel", "reschedule" or "replace")`},
		{name: "replace without id", msg: input("delay-op", "replace", "delay-topic", "orders", "delay-at", "1772366700000"), wantErr: "delay-op: replace needs delay-id"},
		{name: "replace without topic", msg: input("delay-op", "replace", "delay-id", "order-42", "delay-at", "1772366700000"), wantErr: "delay-topic: missing"},
		{name: "replace with recurrence", msg: input("delay-op", "replace", "delay-id", "order-42", "delay-topic", "orders", "delay-at", "1772366700000", "delay-every", "1h"),
			wantErr: "delay-every: not with delay-op replace (a replace stores a single task"},
		{name: "op wrong case", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-op", "Cancel"), wantErr: "unknown op"},
		{name: "cancel without id", msg: input("delay-op", "cancel", "delay-at", "1772366700000"), wantErr: "delay-op: cancel needs delay-id"},
		{name: "cancel with after", msg: input("delay-op", "cancel", "delay-id", "x", "delay-after", "10s"), wantErr: "delay-op: cancel takes delay-at (the task's due time) or no time at all, not delay-after"},
		{name: "cancel by id without id", msg: input("delay-op", "cancel"), wantErr: "delay-op: cancel needs delay-id"},
		{name: "reschedule without id", msg: input("delay-op", "reschedule", "delay-at", "1772366700000"), wantErr: "delay-op: reschedule needs delay-id"},
		{name: "reschedule without time", msg: input("delay-op", "reschedule", "delay-id", "x"), wantErr: "delay-at or delay-after is required"},
		{name: "reschedule with both times", msg: input("delay-op", "reschedule", "delay-id", "x", "delay-at", "1772366700000", "delay-after", "1s"), wantErr: "give exactly one"},
		{name: "reschedule past max delay", msg: input("delay-op", "reschedule", "delay-id", "x", "delay-after", "721h"), wantErr: "over the maximum delay"},
		{name: "cancel with internal topic", msg: input("delay-op", "cancel", "delay-id", "x", "delay-at", "0", "delay-topic", "__x"), wantErr: "is an internal topic"},
		{name: "duplicate topic", msg: input("delay-topic", "orders", "delay-topic", "payments", "delay-at", "1772366700000"),
			wantErr: "delay-topic: header given more than once"},
		{name: "duplicate identical id", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-id", "a", "delay-id", "a"),
			wantErr: "delay-id: header given more than once"},
		{name: "duplicate error header", msg: input("delay-topic", "orders", "delay-at", "1772366700000", "delay-error", "a", "delay-error", "b"),
			wantErr: "delay-error: header given more than once"},
		{name: "payload over the limit", cfg: payload.DecodeConfig{MaxPayload: 2 + len("delay-topic") + 6 + len("delay-at") + 12 + 2*payload.HeaderOverhead},
			msg: input("delay-topic", "orders", "delay-at", "1772366700000"), wantErr: "payload: 104 bytes of key, value and headers (32 bytes each beside key and value), over the 103-byte limit"},
		{name: "empty headers count towards the limit", cfg: payload.DecodeConfig{MaxPayload: 4096},
			msg:     withEmptyHeaders(input("delay-topic", "orders", "delay-at", "1772366700000"), 200),
			wantErr: "over the 4096-byte limit"},
		{name: "256 headers", msg: withEmptyHeaders(input("delay-topic", "orders", "delay-at", "1772366700000"), 254),
			want: want(derived, at, func(t *payload.Task) { t.Headers = withEmptyHeaders(payload.Message{}, 254).Headers })},
		{name: "257 headers", msg: withEmptyHeaders(input("delay-topic", "orders", "delay-at", "1772366700000"), 255),
			wantErr: "headers: 257 headers, over the limit of 256"},
		{name: "200,000 empty headers", msg: withEmptyHeaders(input("delay-topic", "orders", "delay-at", "1772366700000"), 200_000),
			wantErr: "headers: 200002 headers, over the limit of 256"},

		// Topics other systems own: refused by the default allow-list.
		{name: "topic _schemas", msg: input("delay-topic", "_schemas", "delay-at", "1772366700000"), wantErr: `delay-topic: "_schemas" is an internal topic`},
		{name: "topic connect-configs", msg: input("delay-topic", "connect-configs", "delay-at", "1772366700000"), wantErr: `delay-topic: "connect-configs" is an internal topic`},
		{name: "topic _confluent-command", msg: input("delay-topic", "_confluent-command", "delay-at", "1772366700000"), wantErr: `delay-topic: "_confluent-command" is an internal topic`},
		{name: "topic _private by default", msg: input("delay-topic", "_private", "delay-at", "1772366700000"),
			wantErr: `delay-topic: "_private" is not allowed: names starting with _ or connect- need --allow-topics`},
		{name: "topic connect-mine by default", msg: input("delay-topic", "connect-mine", "delay-at", "1772366700000"), wantErr: "need --allow-topics"},
		{name: "topic _schemas even when listed", cfg: payload.DecodeConfig{AllowTopic: topics.Allow([]string{"_schemas", "*"})},
			msg: input("delay-topic", "_schemas", "delay-at", "1772366700000"), wantErr: "is an internal topic"},
		{name: "topic _private when listed", cfg: payload.DecodeConfig{AllowTopic: topics.Allow([]string{"_private"})},
			msg: input("delay-topic", "_private", "delay-at", "1772366700000"), want: want(derived, at, func(t *payload.Task) { t.Topic = "_private" })},
		{name: "topic by prefix", cfg: payload.DecodeConfig{AllowTopic: topics.Allow([]string{"orders.*"})},
			msg: input("delay-topic", "orders.eu", "delay-at", "1772366700000"), want: want(derived, at, func(t *payload.Task) { t.Topic = "orders.eu" })},
		{name: "topic outside the prefix", cfg: payload.DecodeConfig{AllowTopic: topics.Allow([]string{"orders.*"})},
			msg: input("delay-topic", "orders", "delay-at", "1772366700000"), wantErr: `delay-topic: "orders" is not allowed`},

		// Provenance only delayq writes: dropped from input.
		{name: "forged provenance dropped",
			msg: input("a", "1", "delay-topic", "orders", "delay-at", "1772366700000", "delay-replay-of", "delay-failed/0/1",
				"delay-replay-source", "delay-input/9/99", "delay-source-topic", "delay-input-slow", "delay-source-partition", "9",
				"delay-source-offset", "99", "delay-source-host", "x", "b", "2"),
			want: want(derived, at, func(t *payload.Task) { t.Headers = hdr("a", "1", "b", "2") })},
		{name: "payload over the default limit", msg: func() payload.Message {
			m := input("delay-topic", "orders", "delay-at", "1772366700000")
			m.Value = make([]byte, 1<<20)
			return m
		}(), wantErr: "over the 1048576-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := payload.Decode(tt.msg, now, tt.cfg)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Decode succeeded with %+v, want error %q", got, tt.wantErr)
				}
				if !errors.Is(err, payload.ErrContract) {
					t.Errorf("error %v does not wrap ErrContract", err)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// withEmptyHeaders returns m with n more headers, each with an empty key
// and value.
func withEmptyHeaders(m payload.Message, n int) payload.Message {
	m.Headers = append(m.Headers, make([]payload.Header, n)...)
	return m
}

func TestDecodeReasonReadsAlone(t *testing.T) {
	_, err := payload.Decode(input("delay-topic", "orders", "delay-at", "tomorrow"), now, payload.DecodeConfig{})
	if got, want := err.Error(), `delay-at: "tomorrow" is not RFC 3339 or unix ms`; got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
	_, err = payload.Decode(input("delay-topic", "orders", "delay-at", strings.Repeat("z", 100)), now, payload.DecodeConfig{})
	if !strings.Contains(err.Error(), `"`+strings.Repeat("z", 64)+`"...`) {
		t.Errorf("long value not cut at 64 bytes: %q", err)
	}
}

func TestDecodeDoesNotAliasHeaders(t *testing.T) {
	m := input("a", "1", "delay-topic", "orders", "delay-at", "1772366700000")
	got, err := payload.Decode(m, now, payload.DecodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got.Headers[0].Key = "changed"
	if m.Headers[0].Key != "a" {
		t.Error("Decode's headers share the input's backing array")
	}
}

func TestDecodeConfigValidate(t *testing.T) {
	err := payload.DecodeConfig{MaxDelay: -1, MaxPayload: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "MaxDelay") || !strings.Contains(err.Error(), "MaxPayload") {
		t.Errorf("Validate = %v, want both fields reported", err)
	}
	if err := (payload.DecodeConfig{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, size := range []int{100, 10 << 10, 1000 << 10} {
		m := input("trace", "abc", "delay-topic", "orders", "delay-after", "90s", "delay-id", "order-42", "x", "y")
		m.Value = make([]byte, size)
		b.Run(byteSize(size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := payload.Decode(m, now, payload.DecodeConfig{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func byteSize(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

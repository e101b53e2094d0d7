package payload_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// FuzzDecode feeds Decode arbitrary input records and checks the invariants
// of the package doc on what it returns. The record is built from headers,
// one "key=value" per line (a line without "=" is a header with a nil
// value), key, value, the record timestamp in unix ms (0: none, as kafka-go
// reads timestamp 0 or -1) and small, which lowers MaxPayload to 256 bytes.
// The seed corpus is testdata/fuzz/FuzzDecode; make test runs it briefly.
func FuzzDecode(f *testing.F) {
	cfg := payload.DecodeConfig{AllowTopic: func(s string) bool { return s != "forbidden" }}
	f.Fuzz(func(t *testing.T, headers string, key, value []byte, recordMs int64, small bool) {
		m := payload.Message{Topic: "delay-input", Partition: 1, Offset: 7, Key: key, Value: value}
		if recordMs != 0 {
			m.Time = time.UnixMilli(recordMs)
		}
		after := false
		for line := range strings.SplitSeq(headers, "\n") {
			if line == "" {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			h := payload.Header{Key: k}
			if ok {
				h.Value = []byte(v)
			}
			after = after || k == payload.HeaderAfter
			m.Headers = append(m.Headers, h)
		}
		cfg := cfg
		if small {
			cfg.MaxPayload = 256
		}

		got, err := payload.Decode(m, now, cfg)
		if err != nil {
			if !errors.Is(err, payload.ErrContract) {
				t.Fatalf("error %q does not wrap ErrContract", err)
			}
			if err.Error() == "" {
				t.Fatal("error without a reason")
			}
			return
		}
		maxDelay := payload.DefaultMaxDelay.Milliseconds()
		switch {
		case got.Name == "":
			t.Fatal("empty name")
		case got.ID != payload.TaskID(got.Name) || got.ID > payload.MaxID:
			t.Fatalf("ID %d, TaskID(%q) = %d, MaxID %d", got.ID, got.Name, payload.TaskID(got.Name), uint64(payload.MaxID))
		case got.Control == payload.ControlCancelID && (got.ExecAt != 0 || got.Topic != ""):
			t.Fatalf("cancel by id alone with exec_at %d topic %q", got.ExecAt, got.Topic)
		case got.Control != payload.ControlCancelID && got.ExecAt <= 0:
			t.Fatalf("exec_at %d at or before the epoch", got.ExecAt)
		case got.ExecAt-now.UnixMilli() > maxDelay:
			t.Fatalf("exec_at %d more than the maximum delay after now", got.ExecAt)
		case after && m.Time.UnixMilli() <= 0:
			t.Fatal("delay-after accepted without a record timestamp")
		case (got.Cancel || got.Control == payload.ControlCancelID || got.Control == payload.ControlReschedule) &&
			(got.Key != nil || got.Value != nil || got.Headers != nil):
			t.Fatal("cancel or reschedule carries a payload")
		case got.Control == payload.ControlReplace && slices.ContainsFunc(got.Headers, func(h payload.Header) bool {
			return h.Key == payload.HeaderEvery || h.Key == payload.HeaderCron || h.Key == payload.HeaderOccurrence
		}):
			t.Fatal("replace starts a series")
		case !got.Cancel && (got.Control == payload.ControlNone || got.Control == payload.ControlReplace) &&
			(!topics.Legal(got.Topic) || topics.Internal(got.Topic) || got.Topic == "forbidden"):
			t.Fatalf("task for topic %q", got.Topic)
		}
		if len(m.Headers) > payload.MaxHeaders {
			t.Fatalf("%d headers accepted", len(m.Headers))
		}
		for _, h := range got.Headers {
			switch {
			case h.Key == payload.HeaderTopic, h.Key == payload.HeaderAt, h.Key == payload.HeaderAfter,
				h.Key == payload.HeaderID, h.Key == payload.HeaderOp, h.Key == payload.HeaderError:
				t.Fatalf("control header %q passed through", h.Key)
			case payload.Provenance(h.Key):
				t.Fatalf("provenance header %q passed through", h.Key)
			}
		}
		// The next occurrence of a series is later and numbered higher:
		// nothing wraps around.
		if next, ok, err := payload.NextOccurrence(got, payload.DefaultMaxDelay); err == nil && ok {
			_, occ, _, _ := payload.Series(got)
			_, nocc, _, serr := payload.Series(next)
			if serr != nil || next.ExecAt <= got.ExecAt || nocc != occ+1 || nocc <= 0 {
				t.Fatalf("next occurrence %d at %d after %d at %d (%v)", nocc, next.ExecAt, occ, got.ExecAt, serr)
			}
		}
		// A re-read of the same record is the same task.
		again, err := payload.Decode(m, now, cfg)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("second Decode = %+v, %v; first %+v", again, err, got)
		}
	})
}

package record_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
)

func TestRoundTrip(t *testing.T) {
	at := time.UnixMilli(1795251948605).UTC()
	tests := []struct {
		name string
		m    payload.Message
	}{
		{name: "zero", m: payload.Message{}},
		{name: "every field", m: payload.Message{Topic: "delay-input", Partition: 3, Offset: 42, Key: []byte("k"), Value: []byte("v"),
			Headers: []payload.Header{{Key: "a", Value: []byte("1")}, {Key: "a", Value: []byte("2")}, {Key: "nil"}, {Key: "empty", Value: []byte{}}}, Time: at}},
		{name: "empty, not nil", m: payload.Message{Key: []byte{}, Value: []byte{}, Headers: []payload.Header{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := record.FromMessage(tt.m)
			if k.Topic != tt.m.Topic || k.Partition != tt.m.Partition || k.Offset != tt.m.Offset || !k.Time.Equal(tt.m.Time) {
				t.Errorf("FromMessage = %+v, want the fields of %+v", k, tt.m)
			}
			back := record.ToMessage(k)
			if !reflect.DeepEqual(back, tt.m) {
				t.Errorf("ToMessage(FromMessage(m)) = %#v, want %#v", back, tt.m)
			}
			for i, h := range tt.m.Headers {
				if (h.Value == nil) != (k.Headers[i].Value == nil) {
					t.Errorf("header %d: nil value %v became %v", i, h.Value == nil, k.Headers[i].Value == nil)
				}
			}
		})
	}
}

func TestToMessageLeavesReaderFields(t *testing.T) {
	m := record.ToMessage(kafka.Message{Topic: "t", HighWaterMark: 99, Headers: []kafka.Header{{Key: "h", Value: []byte("v")}}})
	if m.Topic != "t" || len(m.Headers) != 1 || m.Headers[0].Key != "h" || string(m.Headers[0].Value) != "v" {
		t.Errorf("ToMessage = %+v", m)
	}
}

// TestHeadersAreFreshSlices: a conversion's header slice is its own, so
// that appending to it or setting an element leaves the other alone.
func TestHeadersAreFreshSlices(t *testing.T) {
	hs := []payload.Header{{Key: "a", Value: []byte("1")}}
	k := record.FromHeaders(hs)
	k[0].Key = "changed"
	if hs[0].Key != "a" {
		t.Errorf("FromHeaders shares its slice: %+v", hs)
	}
	p := record.ToHeaders(k)
	p[0].Key = "again"
	if k[0].Key != "changed" {
		t.Errorf("ToHeaders shares its slice: %+v", k)
	}
	if record.FromHeaders(nil) != nil || record.ToHeaders(nil) != nil || record.FromMessages(nil) != nil {
		t.Error("nil did not stay nil")
	}
	ms := record.FromMessages([]payload.Message{{Topic: "a"}, {Topic: "b"}})
	if len(ms) != 2 || ms[0].Topic != "a" || ms[1].Topic != "b" {
		t.Errorf("FromMessages = %+v", ms)
	}
}

package payload_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/delayq/delayq/payload"
)

func envelopeTasks() []payload.Task {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	return []payload.Task{
		{Topic: "orders", Name: "42"},
		{Topic: "", Name: "", Key: []byte{}, Value: []byte{}},
		{Topic: "t", Name: "delay-input/3/1234", Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 300)},
		{Topic: "t", Name: "n", Key: all, Value: all, Headers: []payload.Header{
			{Key: "a", Value: []byte("1")},
			{Key: "", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: "bin", Value: all},
		}},
	}
}

// envFields is the part of a task an envelope carries.
func envFields(t payload.Task) payload.Task {
	return payload.Task{Topic: t.Topic, Name: t.Name, Key: t.Key, Value: t.Value, Headers: t.Headers}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	for i, want := range envelopeTasks() {
		want.ID, want.ExecAt, want.Cancel = 7, 9, true // not encoded
		b := payload.EncodeEnvelope(&want)
		if len(b) != payload.EnvelopeLen(&want) || cap(b) != len(b) {
			t.Errorf("task %d: len %d cap %d, EnvelopeLen %d", i, len(b), cap(b), payload.EnvelopeLen(&want))
		}
		if b[0] != payload.EnvelopeV1 {
			t.Errorf("task %d: version byte %d", i, b[0])
		}
		got := payload.Task{ID: 1, ExecAt: 2}
		if err := payload.DecodeEnvelope(b, &got); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		if got.ID != 1 || got.ExecAt != 2 || got.Cancel {
			t.Errorf("task %d: decode touched other fields: %+v", i, got)
		}
		if !reflect.DeepEqual(envFields(got), envFields(want)) {
			t.Errorf("task %d:\n got %+v\nwant %+v", i, envFields(got), envFields(want))
		}
		if app := payload.AppendEnvelope([]byte("xy"), &want); !bytes.Equal(app[2:], b) {
			t.Errorf("task %d: AppendEnvelope differs from EncodeEnvelope", i)
		}
	}
}

func TestEnvelopeNilAndEmpty(t *testing.T) {
	var got payload.Task
	if err := payload.DecodeEnvelope(payload.EncodeEnvelope(&payload.Task{Headers: []payload.Header{}}), &got); err != nil {
		t.Fatal(err)
	}
	if got.Key != nil || got.Value != nil || got.Headers != nil {
		t.Errorf("nil key/value and no headers must decode to nil, got %+v", got)
	}
}

func TestEnvelopeRejects(t *testing.T) {
	good := payload.EncodeEnvelope(&envelopeTasks()[3])
	cases := map[string][]byte{
		"empty":          {},
		"version 0":      {0, 0, 0, 0, 0, 0},
		"version 2":      append([]byte{2}, good[1:]...),
		"trailing":       append(append([]byte{}, good...), 0),
		"bad varint":     {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"topic too long": {1, 5, 'a'},
		"many headers":   {1, 0, 0, 0, 100, 0},
		"huge value":     {1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for n := range len(good) {
		cases["truncated"+string(rune('a'+n%26))+string(rune('0'+n/26))] = good[:n]
	}
	for name, b := range cases {
		got := payload.Task{Topic: "keep"}
		err := payload.DecodeEnvelope(b, &got)
		if !errors.Is(err, payload.ErrEnvelope) {
			t.Errorf("%s: err %v, want ErrEnvelope", name, err)
		}
		if got.Topic != "keep" {
			t.Errorf("%s: task changed on error", name)
		}
	}
}

func FuzzEnvelope(f *testing.F) {
	for _, task := range envelopeTasks() {
		f.Add(payload.EncodeEnvelope(&task))
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got payload.Task
		if err := payload.DecodeEnvelope(b, &got); err != nil {
			if !errors.Is(err, payload.ErrEnvelope) {
				t.Fatalf("error %v does not wrap ErrEnvelope", err)
			}
			return
		}
		// What decodes re-encodes to something that decodes the same.
		again := payload.EncodeEnvelope(&got)
		if len(again) > len(b) {
			t.Fatalf("re-encoding grew: %d > %d bytes", len(again), len(b))
		}
		var got2 payload.Task
		if err := payload.DecodeEnvelope(again, &got2); err != nil {
			t.Fatalf("re-encoded envelope rejected: %v", err)
		}
		if !reflect.DeepEqual(got, got2) {
			t.Fatalf("round trip differs:\n %+v\n %+v", got, got2)
		}
	})
}

// benchTask is a 100-byte task: topic, snowflake name, key, one header, value.
func benchTask() payload.Task {
	return payload.Task{
		Topic:   "orders",
		Name:    "1234567890123456789",
		Key:     []byte("customer-42"),
		Headers: []payload.Header{{Key: "trace", Value: []byte("0af7651916cd43dd")}},
		Value:   bytes.Repeat([]byte("x"), 40),
	}
}

func BenchmarkEnvelopeEncode(b *testing.B) {
	task := benchTask()
	b.ReportAllocs()
	b.SetBytes(int64(payload.EnvelopeLen(&task)))
	for b.Loop() {
		_ = payload.EncodeEnvelope(&task)
	}
}

func BenchmarkEnvelopeDecode(b *testing.B) {
	task := benchTask()
	enc := payload.EncodeEnvelope(&task)
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		var t payload.Task
		if err := payload.DecodeEnvelope(enc, &t); err != nil {
			b.Fatal(err)
		}
	}
}

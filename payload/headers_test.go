package payload

import (
	"bytes"
	"reflect"
	"testing"
)

func TestHeadersRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		hs   []Header
	}{
		{"nil value", []Header{{Key: "a", Value: nil}}},
		{"empty value", []Header{{Key: "a", Value: []byte{}}}},
		{"empty key", []Header{{Key: "", Value: []byte("v")}}},
		{"repeated keys keep order", []Header{{Key: "a", Value: []byte("1")}, {Key: "b"}, {Key: "a", Value: []byte("2")}}},
		{"binary", []Header{{Key: "\x00\xff", Value: bytes.Repeat([]byte{0, 0xff}, 300)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeHeaders(EncodeHeaders(tt.hs))
			if err != nil || !reflect.DeepEqual(got, tt.hs) {
				t.Errorf("round trip = %#v, %v; want %#v", got, err, tt.hs)
			}
		})
	}
}

func TestDecodeHeadersRejectsGarbage(t *testing.T) {
	good := EncodeHeaders([]Header{{Key: "key", Value: []byte("value")}})
	for name, b := range map[string][]byte{
		"empty":       {},
		"truncated":   good[:len(good)-1],
		"trailing":    append(append([]byte{}, good...), 0),
		"huge count":  {0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge key":    {1, 0xff, 0xff, 0x03},
		"huge value":  {1, 0, 0xff, 0xff, 0x03},
		"bad varint":  {0xff},
		"missing val": {1, 1, 'k'},
	} {
		if _, err := DecodeHeaders(b); err == nil {
			t.Errorf("%s: DecodeHeaders(%x) succeeded", name, b)
		}
	}
}

func FuzzHeaders(f *testing.F) {
	f.Add(EncodeHeaders([]Header{{Key: "a", Value: []byte("b")}, {Key: "c"}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := DecodeHeaders(b)
		if err != nil {
			return
		}
		if again, err := DecodeHeaders(EncodeHeaders(hs)); err != nil || !reflect.DeepEqual(again, hs) {
			t.Fatalf("re-encoding %#v gives %#v, %v", hs, again, err)
		}
	})
}

func TestScanRange(t *testing.T) {
	start, stop := ScanRange(3, 1000, 2000)
	in := func(r Ref) bool {
		k := RowKey(16, r)
		k[0] = 3 // as if it had salt 3
		return bytes.Compare(start, k) <= 0 && bytes.Compare(k, stop) < 0
	}
	for _, tt := range []struct {
		ref  Ref
		want bool
	}{
		{Ref{ID: 0, ExecAt: 999}, false},
		{Ref{ID: 1<<64 - 1, ExecAt: 999}, false},
		{Ref{ID: 0, ExecAt: 1000}, true},
		{Ref{ID: 1<<64 - 1, ExecAt: 1999}, true},
		{Ref{ID: 0, ExecAt: 2000}, false},
	} {
		if got := in(tt.ref); got != tt.want {
			t.Errorf("%v in [1000, 2000) = %v, want %v", tt.ref, got, tt.want)
		}
	}
}

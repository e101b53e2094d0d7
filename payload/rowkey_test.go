package payload_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"testing"

	"github.com/delayq/delayq/payload"
)

// specRowKey builds a rowkey straight from the package doc, with the
// standard library's FNV-1a.
func specRowKey(salts int, r payload.Ref) []byte {
	var body [16]byte
	binary.BigEndian.PutUint64(body[:8], uint64(r.ExecAt))
	binary.BigEndian.PutUint64(body[8:], r.ID)
	h := fnv.New64a()
	h.Write(body[:])
	return append([]byte{byte(h.Sum64() % uint64(salts))}, body[:]...)
}

func TestRowKey(t *testing.T) {
	tests := []struct {
		name  string
		salts int
		ref   payload.Ref
		want  []byte // nil: check against the spec only
	}{
		// Golden keys: the salt is part of the stored data and must never change.
		{"golden zero", 16, payload.Ref{}, []byte{0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"golden", 16, payload.Ref{ID: 0x0102030405060708, ExecAt: 1772366700000},
			[]byte{0x0b, 0, 0, 1, 0x9c, 0xa9, 0x49, 0x9d, 0xe0, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"one salt", 1, payload.Ref{ID: 99, ExecAt: 12345}, nil},
		{"256 salts", 256, payload.Ref{ID: 1<<64 - 1, ExecAt: 1<<63 - 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := payload.RowKey(tt.salts, tt.ref)
			if spec := specRowKey(tt.salts, tt.ref); !bytes.Equal(got, spec) {
				t.Errorf("RowKey = %x, spec says %x", got, spec)
			}
			if tt.want != nil && !bytes.Equal(got, tt.want) {
				t.Errorf("RowKey = %#v, want %#v", got, tt.want)
			}
			if back, err := payload.ParseRowKey(got); err != nil || back != tt.ref {
				t.Errorf("ParseRowKey = %v, %v; want %v", back, err, tt.ref)
			}
		})
	}
}

func TestRowKeySpreadsOverSalts(t *testing.T) {
	const salts = 16
	var count [salts]int
	for i := range 16000 {
		r := payload.Ref{ID: payload.TaskID(fmt.Sprint(i)), ExecAt: 1772366700000} // all due at once
		count[payload.RowKey(salts, r)[0]]++
	}
	for s, n := range count {
		if n < 800 || n > 1200 {
			t.Errorf("salt %d holds %d of 16000 keys due together, want about 1000", s, n)
		}
	}
}

func TestRowKeyPanicsOnBadSalts(t *testing.T) {
	for _, salts := range []int{0, -1, 257} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RowKey(%d, ...) did not panic", salts)
				}
			}()
			payload.RowKey(salts, payload.Ref{})
		}()
	}
}

func TestParseRowKeyErrors(t *testing.T) {
	neg := payload.RowKey(4, payload.Ref{ExecAt: -1})
	for name, key := range map[string][]byte{
		"empty":         nil,
		"short":         make([]byte, 16),
		"long":          make([]byte, 18),
		"negative time": neg,
	} {
		if _, err := payload.ParseRowKey(key); !errors.Is(err, payload.ErrRowKey) {
			t.Errorf("%s: ParseRowKey(%x) = %v, want ErrRowKey", name, key, err)
		}
	}
}

func TestSplitKeys(t *testing.T) {
	if got := payload.SplitKeys(1); len(got) != 0 {
		t.Errorf("SplitKeys(1) = %v, want none", got)
	}
	got := payload.SplitKeys(16)
	if len(got) != 15 {
		t.Fatalf("SplitKeys(16) has %d keys, want 15", len(got))
	}
	for i, k := range got {
		if !bytes.Equal(k, []byte{byte(i + 1)}) {
			t.Errorf("SplitKeys(16)[%d] = %x, want %02x", i, k, i+1)
		}
	}
	// Every key of salt s falls in region s: [split[s-1], split[s]).
	keys := payload.SplitKeys(256)
	for _, r := range []payload.Ref{{}, {ID: 1<<64 - 1, ExecAt: 1<<63 - 1}, {ID: 5, ExecAt: 77}} {
		k := payload.RowKey(256, r)
		s := int(k[0])
		if s > 0 && bytes.Compare(k, keys[s-1]) < 0 || s < 255 && bytes.Compare(k, keys[s]) >= 0 {
			t.Errorf("key %x outside region %d", k, s)
		}
	}
}

func TestTaskID(t *testing.T) {
	// The 64-bit FNV-1a hash with the top bit cleared.
	fnvOf := func(s string) uint64 { h := fnv.New64a(); h.Write([]byte(s)); return h.Sum64() &^ (1 << 63) }
	tests := []struct {
		name string
		want uint64
	}{
		{"0", 0},
		{"1234567890123456789", 1234567890123456789},
		{"9223372036854775807", 1<<63 - 1},                      // MaxID
		{"9223372036854775808", fnvOf("9223372036854775808")},   // above MaxID
		{"18446744073709551615", fnvOf("18446744073709551615")}, // above MaxID
		{"18446744073709551616", fnvOf("18446744073709551616")}, // overflows
		{"0123", fnvOf("0123")},                                 // not canonical
		{"+5", fnvOf("+5")},
		{"-5", fnvOf("-5")},
		{"order-42", fnvOf("order-42")},
		{"", fnvOf("")},
	}
	for _, tt := range tests {
		if got := payload.TaskID(tt.name); got != tt.want {
			t.Errorf("TaskID(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
	// Golden values: FNV-1a-64 of "order-42" is 0x7d1deb86a05662d4 (top
	// bit clear, kept as is); of "delay-input/3/1234" 0x96d089f6c83116bc
	// (top bit set, cleared).
	golden := map[string]uint64{
		"order-42":           0x7d1deb86a05662d4,
		"delay-input/3/1234": 0x16d089f6c83116bc,
	}
	for name, want := range golden {
		if got := payload.TaskID(name); got != want || got > payload.MaxID {
			t.Errorf("TaskID(%q) = %d, want %d <= MaxID", name, got, want)
		}
	}
	// About half of all 64-bit hashes have the top bit set; none of the ids does.
	high := 0
	for i := range 1000 {
		name := fmt.Sprintf("task-%d", i)
		if fnv64(name)>>63 == 1 {
			high++
		}
		if id := payload.TaskID(name); id > payload.MaxID {
			t.Fatalf("TaskID(%q) = %d > MaxID", name, id)
		}
	}
	if high < 400 {
		t.Errorf("only %d of 1000 hashes had the top bit set; the test proves nothing", high)
	}
}

func fnv64(s string) uint64 { h := fnv.New64a(); h.Write([]byte(s)); return h.Sum64() }

func TestDerivedName(t *testing.T) {
	if got := payload.DerivedName("delay-input", 3, 1234); got != "delay-input/3/1234" {
		t.Errorf("DerivedName = %q", got)
	}
}

func TestDeliverable(t *testing.T) {
	tk := payload.Task{
		ID: 7, Name: "order-42", Topic: "orders", ExecAt: 1772366700123,
		Key: []byte("k"), Value: []byte("v"),
		Headers: make([]payload.Header, 1, 10), // spare capacity must not be shared
	}
	tk.Headers[0] = payload.Header{Key: "trace", Value: []byte("abc")}
	got := payload.Deliverable(tk)
	want := payload.Message{Topic: "orders", Key: []byte("k"), Value: []byte("v"), Headers: []payload.Header{
		{Key: "trace", Value: []byte("abc")},
		{Key: "delay-id", Value: []byte("order-42")},
		{Key: "delay-at", Value: []byte("2026-03-01T12:05:00.123Z")},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Deliverable:\n got %+v\nwant %+v", got, want)
	}
	other := payload.Deliverable(tk)
	got.Headers[1].Value = []byte("changed")
	if string(other.Headers[1].Value) != "order-42" {
		t.Error("two Deliverables share header storage")
	}
}

func TestRefOrderMatchesKeyOrder(t *testing.T) {
	refs := []payload.Ref{{0, 0}, {1, 0}, {0, 1}, {1<<64 - 1, 1}, {0, 256}, {5, 1 << 40}}
	for _, a := range refs {
		for _, b := range refs {
			ka, kb := payload.RowKey(1, a), payload.RowKey(1, b)
			want := cmp.Or(cmp.Compare(a.ExecAt, b.ExecAt), cmp.Compare(a.ID, b.ID))
			if got := bytes.Compare(ka, kb); got != want {
				t.Errorf("keys of %v and %v compare %d, refs %d", a, b, got, want)
			}
		}
	}
}

func FuzzRowKey(f *testing.F) {
	f.Add(uint16(16), int64(1772366700000), uint64(42), int64(1772366700001), uint64(1))
	f.Add(uint16(255), int64(0), uint64(0), int64(1<<63-1), uint64(1<<64-1))
	f.Fuzz(func(t *testing.T, s uint16, at1 int64, id1 uint64, at2 int64, id2 uint64) {
		salts := int(s)%payload.MaxSalts + 1
		a := payload.Ref{ID: id1, ExecAt: max(at1, -(at1 + 1))} // fold negatives into >= 0
		b := payload.Ref{ID: id2, ExecAt: max(at2, -(at2 + 1))}
		ka, kb := payload.RowKey(salts, a), payload.RowKey(salts, b)
		if len(ka) != payload.RowKeyLen || int(ka[0]) >= salts {
			t.Fatalf("RowKey(%d, %v) = %x", salts, a, ka)
		}
		if !bytes.Equal(ka, specRowKey(salts, a)) {
			t.Fatalf("RowKey(%d, %v) = %x, spec %x", salts, a, ka, specRowKey(salts, a))
		}
		if got, err := payload.ParseRowKey(ka); err != nil || got != a {
			t.Fatalf("ParseRowKey(RowKey(%v)) = %v, %v", a, got, err)
		}
		if !bytes.Equal(payload.AppendRowKey([]byte("x"), salts, a)[1:], ka) {
			t.Fatal("AppendRowKey differs from RowKey")
		}
		if ka[0] == kb[0] {
			want := cmp.Or(cmp.Compare(a.ExecAt, b.ExecAt), cmp.Compare(a.ID, b.ID))
			if got := bytes.Compare(ka, kb); got != want {
				t.Fatalf("same salt: keys of %v, %v compare %d, refs %d", a, b, got, want)
			}
		}
	})
}

func BenchmarkRowKey(b *testing.B) {
	r := payload.Ref{ID: 1234567890123456789, ExecAt: 1772366700000}
	for _, salts := range []int{16, 256} {
		b.Run(fmt.Sprintf("salts=%d", salts), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				payload.RowKey(salts, r)
			}
		})
	}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, payload.RowKeyLen)
		for b.Loop() {
			buf = payload.AppendRowKey(buf[:0], 16, r)
		}
	})
	for _, n := range []int{1, 100, 1000} {
		refs := make([]payload.Ref, n)
		for i := range refs {
			refs[i] = payload.Ref{ID: uint64(i), ExecAt: r.ExecAt}
		}
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range refs {
					payload.RowKey(16, r)
				}
			}
		})
	}
}

func BenchmarkParseRowKey(b *testing.B) {
	for _, n := range []int{1, 1000} {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = payload.RowKey(16, payload.Ref{ID: uint64(i), ExecAt: 1772366700000})
		}
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, k := range keys {
					if _, err := payload.ParseRowKey(k); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

package payload

import (
	"fmt"
	"strconv"
	"testing"
)

// The hot paths of delivery and ingest besides the rowkey and Decode (see
// rowkey_test.go and decode_test.go): the output message of a due task, the
// header codec of the d:h column, and the name-to-id mapping.

func BenchmarkDeliverable(b *testing.B) {
	for _, size := range []int{100, 10 << 10} {
		for _, headers := range []int{0, 4} {
			t := Task{ID: 1, Name: "order-42", Topic: "orders", ExecAt: 1772366700123, Key: []byte("k"), Value: make([]byte, size)}
			for i := range headers {
				t.Headers = append(t.Headers, Header{Key: "h" + strconv.Itoa(i), Value: []byte("value")})
			}
			b.Run(fmt.Sprintf("value=%dB/headers=%d", size, headers), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Deliverable(t)
				}
			})
		}
	}
}

func BenchmarkHeaders(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		hs := make([]Header, n)
		for i := range hs {
			hs[i] = Header{Key: "header-" + strconv.Itoa(i), Value: []byte("some header value")}
		}
		enc := EncodeHeaders(hs)
		b.Run(fmt.Sprintf("encode/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				EncodeHeaders(hs)
			}
		})
		b.Run(fmt.Sprintf("decode/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeHeaders(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkTaskID(b *testing.B) {
	for _, name := range []string{"1795251948605879672", "order-42", "delay-input/3/1234567"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				TaskID(name)
			}
		})
	}
}

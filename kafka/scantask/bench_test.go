package scantask

import (
	"testing"

	"github.com/segmentio/kafka-go"
)

// BenchmarkTask is the codec of one scan task: a tick emits one per due
// zset (256 per segment by default) and a scanner parses each.
func BenchmarkTask(b *testing.B) {
	s := Task{Zset: "delayq:202501311459:217", Until: 1738335600000}
	b.Run("message", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Message()
		}
	})
	m := s.Message()
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	bad := kafka.Message{Value: []byte(`{"zset":"a","until":-1}`)}
	b.Run("parse-invalid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(bad); err == nil {
				b.Fatal("accepted")
			}
		}
	})
}

package scantask

import (
	"errors"
	"reflect"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/topics"
)

func TestTask(t *testing.T) {
	s := Task{Zset: "delayq:202501311459:17", Until: 1738335600000}
	m := s.Message()
	if m.Topic != topics.Scan || string(m.Key) != s.Zset {
		t.Fatalf("Message() = topic %q key %q", m.Topic, m.Key)
	}
	if want := `{"zset":"delayq:202501311459:17","until":1738335600000}`; string(m.Value) != want {
		t.Fatalf("value %s, want %s", m.Value, want)
	}
	got, err := Parse(m)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("Parse(Message()) = %+v, %v", got, err)
	}

	g := Task{Zset: "q:202501311459:17", More: []string{"q:202501311459:1.273", "q:202501311459:2.529"}, Until: 1738335600000}
	m = g.Message()
	if want := `{"zset":"q:202501311459:17","more":["q:202501311459:1.273","q:202501311459:2.529"],"until":1738335600000}`; string(m.Value) != want || string(m.Key) != g.Zset {
		t.Fatalf("group: key %q value %s, want key %q value %s", m.Key, m.Value, g.Zset, want)
	}
	if got, err := Parse(m); err != nil || !reflect.DeepEqual(got, g) || !reflect.DeepEqual(got.Keys(), append([]string{g.Zset}, g.More...)) {
		t.Fatalf("Parse(group) = %+v, %v", got, err)
	}

	bad := []struct {
		name string
		m    kafka.Message
	}{
		{"not json", kafka.Message{Value: []byte("zset")}},
		{"no zset", kafka.Message{Value: []byte(`{"until":5}`)}},
		{"no until", kafka.Message{Value: []byte(`{"zset":"a"}`)}},
		{"negative until", kafka.Message{Value: []byte(`{"zset":"a","until":-1}`)}},
		{"key is another zset", kafka.Message{Key: []byte("b"), Value: []byte(`{"zset":"a","until":5}`)}},
		{"empty zset in more", kafka.Message{Value: []byte(`{"zset":"a","more":["b",""],"until":5}`)}},
		{"zset repeated in more", kafka.Message{Value: []byte(`{"zset":"a","more":["b","a"],"until":5}`)}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse(tt.m); !errors.Is(err, ErrBad) {
				t.Fatalf("Parse = %v, want ErrBad", err)
			}
		})
	}
	if got, err := Parse(kafka.Message{Value: []byte(`{"zset":"a","until":5}`)}); err != nil || got.Zset != "a" {
		t.Fatalf("without key: %+v, %v", got, err)
	}
}

package scantask

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/topics"
)

// ErrBad is wrapped by Parse for a message that is not a
// scan task.
var ErrBad = errors.New("scantask: bad scan task")

// Task asks a scanner to deliver everything in Zset and in each of More
// with score <= Until. It travels as the JSON value of a scan-topic message
// whose key is Zset.
type Task struct {
	Zset  string   `json:"zset"`
	More  []string `json:"more,omitempty"` // further zsets of Zset's group
	Until int64    `json:"until"`          // unix ms, inclusive
}

// Keys returns Zset followed by More.
func (s Task) Keys() []string {
	return append([]string{s.Zset}, s.More...)
}

// Message returns the scan-topic message for s: topic delay-scan, key =
// zset key, value = JSON.
func (s Task) Message() kafka.Message {
	v, _ := json.Marshal(s) // strings and an int cannot fail
	return kafka.Message{Topic: topics.Scan, Key: []byte(s.Zset), Value: v}
}

// Parse decodes a scan-topic message. The key, when present, must
// be the zset key.
func Parse(m kafka.Message) (Task, error) {
	var s Task
	if err := json.Unmarshal(m.Value, &s); err != nil {
		return Task{}, fmt.Errorf("%w: %w", ErrBad, err)
	}
	switch {
	case s.Zset == "":
		return Task{}, fmt.Errorf("%w: no zset", ErrBad)
	case s.Until <= 0:
		return Task{}, fmt.Errorf("%w: until %d", ErrBad, s.Until)
	case len(m.Key) > 0 && string(m.Key) != s.Zset:
		return Task{}, fmt.Errorf("%w: key %q is not zset %q", ErrBad, m.Key, s.Zset)
	}
	seen := map[string]bool{s.Zset: true}
	for _, k := range s.More {
		if k == "" || seen[k] {
			return Task{}, fmt.Errorf("%w: empty or repeated zset %q in more", ErrBad, k)
		}
		seen[k] = true
	}
	return s, nil
}

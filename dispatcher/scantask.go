package dispatcher

import (
	"encoding/json"
	"errors"
	"fmt"

	dqkafka "github.com/delayq/delayq/kafka"
	"github.com/segmentio/kafka-go"
)

// ErrBadScanTask is wrapped by ParseScanTask for a message that is not a
// scan task.
var ErrBadScanTask = errors.New("dispatcher: bad scan task")

// ScanTask asks a scanner to deliver everything in one zset with score <=
// Until. It travels as the JSON value of a scan-topic message whose key is
// the zset key.
type ScanTask struct {
	Zset  string `json:"zset"`
	Until int64  `json:"until"` // unix ms, inclusive
}

// Message returns the scan-topic message for s: topic delay-scan, key =
// zset key, value = JSON.
func (s ScanTask) Message() kafka.Message {
	v, _ := json.Marshal(s) // a struct of a string and an int cannot fail
	return kafka.Message{Topic: dqkafka.TopicScan, Key: []byte(s.Zset), Value: v}
}

// ParseScanTask decodes a scan-topic message. The key, when present, must
// be the zset key.
func ParseScanTask(m kafka.Message) (ScanTask, error) {
	var s ScanTask
	if err := json.Unmarshal(m.Value, &s); err != nil {
		return ScanTask{}, fmt.Errorf("%w: %w", ErrBadScanTask, err)
	}
	switch {
	case s.Zset == "":
		return ScanTask{}, fmt.Errorf("%w: no zset", ErrBadScanTask)
	case s.Until <= 0:
		return ScanTask{}, fmt.Errorf("%w: until %d", ErrBadScanTask, s.Until)
	case len(m.Key) > 0 && string(m.Key) != s.Zset:
		return ScanTask{}, fmt.Errorf("%w: key %q is not zset %q", ErrBadScanTask, m.Key, s.Zset)
	}
	return s, nil
}

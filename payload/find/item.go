package find

import (
	"encoding/base64"
	"unicode/utf8"

	"github.com/delayq/delayq/payload"
)

// Item is a Task as listings show it (GET /v1/tasks, delayctl list
// --json): what it is and where it goes, the value's size but not the
// value (a page of 1,000 tasks must not carry 1,000 payloads).
type Item struct {
	ID         string            `json:"id"`
	State      string            `json:"state"`
	Topic      string            `json:"topic,omitempty"` // "" for a cancel marker stored before its task
	At         string            `json:"at"`              // RFC 3339 UTC, milliseconds
	AtMs       int64             `json:"at_ms"`
	Key        *string           `json:"key,omitempty"`        // the key when it is UTF-8
	KeyBase64  *string           `json:"key_base64,omitempty"` // else in base64
	Headers    map[string]string `json:"headers,omitempty"`    // a repeated header: its last value
	ValueBytes int               `json:"value_bytes"`
}

// ItemOf returns t as an Item.
func ItemOf(t Task) Item {
	it := Item{ID: t.Name, State: string(t.State), Topic: t.Topic, At: payload.FormatTime(t.ExecAt), AtMs: t.ExecAt, ValueBytes: len(t.Value)}
	switch {
	case t.Key == nil:
	case utf8.Valid(t.Key):
		k := string(t.Key)
		it.Key = &k
	default:
		k := base64.StdEncoding.EncodeToString(t.Key)
		it.KeyBase64 = &k
	}
	if len(t.Headers) > 0 {
		it.Headers = make(map[string]string, len(t.Headers))
		for _, h := range t.Headers {
			it.Headers[h.Key] = string(h.Value)
		}
	}
	return it
}

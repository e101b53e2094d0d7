package find

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
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

// View is a Page as listings answer it (GET /v1/tasks, the console's
// /ui/api/tasks, delayctl list).
type View struct {
	Tasks    []Item `json:"tasks"`
	Next     string `json:"next,omitempty"` // the cursor of the next page; absent at the end
	Examined int    `json:"examined"`       // rows read for this page
}

// ViewOf returns p as a View.
func ViewOf(p Page) View {
	v := View{Tasks: make([]Item, len(p.Tasks)), Next: p.Next, Examined: p.Examined}
	for i, t := range p.Tasks {
		v.Tasks[i] = ItemOf(t)
	}
	return v
}

// ParseQuery reads a query string: topic, key (prefix), from and to (what
// delayctl's time flags take, payload.ParseTime: unix ms, RFC 3339, a
// date, now, or relative to now like -1h, +30m, -2d), state, limit,
// cursor. Its errors wrap ErrQuery; it does not Validate.
func ParseQuery(v url.Values, now time.Time) (Query, error) {
	q := Query{Topic: v.Get("topic"), KeyPrefix: v.Get("key"), State: payload.Phase(v.Get("state")), Cursor: v.Get("cursor")}
	var errs []error
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"from", &q.From}, {"to", &q.To}} {
		if s := v.Get(f.name); s != "" {
			t, err := payload.ParseTime(s, now)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %v", ErrQuery, f.name, err))
			}
			*f.dst = t.UnixMilli()
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			errs = append(errs, fmt.Errorf("%w: limit %q: want 1 to %d", ErrQuery, s, MaxLimit))
		}
		q.Limit = n
	}
	return q, errors.Join(errs...)
}

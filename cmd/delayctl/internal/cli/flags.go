package cli

import (
	"fmt"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
)

// timeHelp is how the time flags describe their format.
const timeHelp = "RFC 3339, 2006-01-02, unix ms, now, or relative like -1h, +30m, -2d"

// delayHelp is how the delay flags describe their format: payload.ParseDelay's.
const delayHelp = "90s, 1h30m, 2d, 1d12h or plain seconds"

// parseTime reads a time flag: payload.ParseTime, the syntax of the HTTP
// API's list filters too.
func parseTime(s string, now time.Time) (time.Time, error) { return payload.ParseTime(s, now) }

// parseDue reads a due time flag (name): unix ms and RFC 3339 by the
// wire's rule (payload.ParseDueTime: a number that looks like unix
// seconds is refused, naming the unit), the rest of parseTime's syntax
// (a date, now, a relative time) checked as a due time after.
func parseDue(name, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if _, rfc := time.Parse(time.RFC3339Nano, s); rfc == nil || s != "" && strings.Trim(s, "0123456789") == "" {
		ms, err := payload.ParseDueTime(name, s)
		if err != nil {
			return time.Time{}, err
		}
		if rfc == nil {
			t, _ := time.Parse(time.RFC3339Nano, s)
			return t, nil
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := payload.ParseTime(s, now)
	if err != nil {
		return time.Time{}, err
	}
	return t, payload.CheckDueTime(name, t.UnixMilli(), s)
}

// timeValue is a pflag.Value for a time flag; relative times count from
// the clock when the flag is set. due names a flag that gives a due time
// (parseDue's rules); empty: a time of a range or a lookup (parseTime).
type timeValue struct {
	t   time.Time
	now func() time.Time
	due string
}

func (v *timeValue) String() string {
	if v.t.IsZero() {
		return ""
	}
	return v.t.UTC().Format(time.RFC3339Nano)
}

func (v *timeValue) Set(s string) error {
	var t time.Time
	var err error
	if v.due != "" {
		t, err = parseDue(v.due, s, v.now())
	} else {
		t, err = parseTime(s, v.now())
	}
	if err != nil {
		return err
	}
	v.t = t
	return nil
}

func (v *timeValue) Type() string { return "time" }

// ms returns the time in unix milliseconds.
func (v *timeValue) ms() int64 { return v.t.UnixMilli() }

// durationValue is a pflag.Value for a delay (payload.ParseDelay) of the
// flag name.
type durationValue struct {
	d    time.Duration
	name string
}

func (v *durationValue) String() string {
	if v.d == 0 {
		return ""
	}
	return v.d.String()
}

func (v *durationValue) Set(s string) error {
	d, err := payload.ParseDelay(v.name, strings.TrimSpace(s))
	if err != nil {
		return err
	}
	v.d = d
	return nil
}

func (v *durationValue) Type() string { return "duration" }

// parseHeaders reads -H key=value flags. The value may be empty; the key
// may not, nor may it be a delay control header.
func parseHeaders(kvs []string) ([]kafka.Header, error) {
	var hs []kafka.Header
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return nil, usagef("-H %q: want key=value", kv)
		case k == "":
			return nil, usagef("-H %q: empty header key", kv)
		case controlHeader(k):
			return nil, usagef("-H %q: %s is a delay control header; use the flags instead", kv, k)
		}
		hs = append(hs, kafka.Header{Key: k, Value: []byte(v)})
	}
	return hs, nil
}

func controlHeader(k string) bool {
	switch k {
	case payload.HeaderTopic, payload.HeaderAt, payload.HeaderAfter,
		payload.HeaderID, payload.HeaderOp, payload.HeaderError:
		return true
	}
	return false
}

// formatTime renders a due time for people: RFC 3339 UTC with milliseconds
// and the unix ms.
func formatTime(ms int64) string {
	return fmt.Sprintf("%s (unix ms %d)", payload.FormatTime(ms), ms)
}

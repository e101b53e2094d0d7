package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
)

// timeHelp is how the time flags describe their format.
const timeHelp = "RFC 3339, 2006-01-02, unix ms, now, or relative like -1h, +30m, -2d"

var errTimeFormat = errors.New("not RFC 3339, a date, unix ms, now, or a relative time like -1h, +30m, -2d")

// parseTime reads a time flag: RFC 3339 (any precision, any zone), a date
// (UTC midnight), unix milliseconds, "now", or a signed duration relative
// to now ("-1h", "+30m", "-2d", "-1d12h").
func parseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return time.Time{}, errors.New("empty")
	case s == "now":
		return now, nil
	case isDigits(s):
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is out of range for unix ms", s)
		}
		return time.UnixMilli(ms).UTC(), nil
	case s[0] == '+' || s[0] == '-':
		d, err := parseDuration(s[1:])
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: %w", s, errTimeFormat)
		}
		if s[0] == '-' {
			d = -d
		}
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if t.UnixMilli() < 0 {
			return time.Time{}, fmt.Errorf("%q is before 1970", s)
		}
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: %w", s, errTimeFormat)
}

// parseDuration reads a non-negative duration: a Go duration ("90s",
// "1h30m"), plain seconds ("90", "1.5"), optionally led by whole days
// ("2d", "1d12h").
func parseDuration(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 && isDigits(s[:i]) {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n > 100_000 {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	if isSeconds(s) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f*float64(time.Second) >= float64(1<<62) {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return days + time.Duration(f*float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("%q is not a duration like 90s, 1h30m, 2d or plain seconds", s)
	}
	return days + d, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isSeconds(s string) bool {
	whole, frac, dot := strings.Cut(s, ".")
	return isDigits(whole) && (!dot || isDigits(frac))
}

// timeValue is a pflag.Value for a time flag; relative times count from
// the clock when the flag is set.
type timeValue struct {
	t   time.Time
	now func() time.Time
}

func (v *timeValue) String() string {
	if v.t.IsZero() {
		return ""
	}
	return v.t.UTC().Format(time.RFC3339Nano)
}

func (v *timeValue) Set(s string) error {
	t, err := parseTime(s, v.now())
	if err != nil {
		return err
	}
	v.t = t
	return nil
}

func (v *timeValue) Type() string { return "time" }

// ms returns the time in unix milliseconds.
func (v *timeValue) ms() int64 { return v.t.UnixMilli() }

// durationValue is a pflag.Value for parseDuration.
type durationValue struct{ d time.Duration }

func (v *durationValue) String() string {
	if v.d == 0 {
		return ""
	}
	return v.d.String()
}

func (v *durationValue) Set(s string) error {
	d, err := parseDuration(strings.TrimSpace(s))
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

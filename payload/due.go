package payload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The rules of due times and delays, shared by every front door: the wire
// decoder (Decode), the HTTP API, the Go client and delayctl call these
// functions, so that they accept and refuse the same values for the same
// reasons. name is how the caller's user names the value (delay-at,
// "at", --at, At); each reason starts with it.
//
// One syntax everywhere:
//
//   - A due time (delay-at, delay-until, a reschedule's new time) is unix
//     milliseconds (decimal digits) or RFC 3339. It must be at or after
//     MinDueTime: a smaller number is unix seconds given as milliseconds
//     (a 2026 time in seconds, 1795829478, is 1970-01-21 in ms), which
//     would be delivered at once; the reason names the unit.
//   - A delay (delay-after, delay-every, delay-expire-after) is a Go
//     duration ("90s", "1h30m"), optionally led by whole days ("2d",
//     "1d12h"), or plain seconds ("90", "1.5"); never negative.
//   - A due time is at most the maximum delay (delayd's --max-delay,
//     default 720h) after now, and a delay at most the maximum delay.

// MinDueTime is the earliest due time accepted, in unix ms:
// 1973-03-03T09:46:40Z. A positive number below it read as unix seconds is
// a time before the year 5138; read as milliseconds it is a time in the
// first two years of 1970: a producer that sent seconds.
const MinDueTime int64 = 100_000_000_000

// maxDays bounds the days of a delay ("100000d" is 273 years, about the
// range of a time.Duration).
const maxDays = 100_000

// ParseDueTime reads a due time: unix ms or RFC 3339, at or after
// MinDueTime (CheckDueTime). Errors wrap ErrContract and read
// `NAME: "VALUE" is not RFC 3339 or unix ms`, or name the unit of a
// number that looks like unix seconds.
func ParseDueTime(name, s string) (int64, error) {
	if s != "" && isDigits(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, violation("%s: %s is out of range for unix ms", name, quote([]byte(s)))
		}
		return ms, checkDueNumber(name, s, ms)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, violation("%s: %s is not RFC 3339 or unix ms", name, quote([]byte(s)))
	}
	ms := t.UnixMilli()
	return ms, CheckDueTime(name, ms, s)
}

// CheckDueTime refuses a due time (unix ms) before MinDueTime. given is
// the value as the user gave it, for the reason ("" for a typed time: the
// reason then shows ms as a time).
//
// 0 and 1970-01-01T00:00:00Z are what a producer sends when it forgot to
// set the time; a positive number below MinDueTime is unix seconds taken
// as milliseconds; no time before 1973 is a meaningful due time. A past
// due time after it is delivered at once.
func CheckDueTime(name string, ms int64, given string) error {
	if given == "" {
		given = FormatTime(ms)
	}
	switch {
	case ms <= 0:
		return violation("%s: %s is at or before the unix epoch (1970-01-01T00:00:00Z); give the due time (a past one is delivered at once)", name, quote([]byte(given)))
	case ms < MinDueTime:
		return violation("%s: %s is before %s, the earliest due time accepted (a past one after it is delivered at once)",
			name, quote([]byte(given)), FormatTime(MinDueTime))
	}
	return nil
}

// checkDueNumber is CheckDueTime for a due time given as a number (s, its
// digits): a number below MinDueTime is named as unix seconds.
func checkDueNumber(name, s string, ms int64) error {
	if ms > 0 && ms < MinDueTime {
		return violation("%s: %s looks like unix seconds; %s is unix milliseconds (%s000)", name, s, name, strings.TrimLeft(s, "0"))
	}
	return CheckDueTime(name, ms, s)
}

// CheckSecondsTime is CheckDueTime for a due time given as a typed time
// (the Go client's time.Time): one before MinDueTime is named as what
// time.UnixMilli makes of unix seconds.
func CheckSecondsTime(name string, t time.Time) error {
	ms := t.UnixMilli()
	if ms > 0 && ms < MinDueTime {
		return violation("%s: %s is before %s, the earliest due time accepted: it looks like unix seconds read as milliseconds (time.UnixMilli(%d)); for seconds use time.Unix(%d, 0)",
			name, FormatTime(ms), FormatTime(MinDueTime), ms, ms)
	}
	return CheckDueTime(name, ms, "")
}

// ParseDelay reads a delay: a Go duration ("90s", "1h30m"), optionally led
// by whole days ("2d", "1d12h"), or plain seconds ("90", "1.5"). It must
// not be negative. Errors wrap ErrContract and read
// `NAME: "VALUE" is not a Go duration or seconds (…)` or `… is negative`.
func ParseDelay(name, s string) (time.Duration, error) {
	v := []byte(s)
	syntax := func() error {
		return violation("%s: %s is not a Go duration or seconds (90s, 1h30m, 2d, 1d12h or 90)", name, quote(v))
	}
	rest := strings.TrimPrefix(s, "+") // time.ParseDuration takes "+5s": so did delay-after
	if strings.HasPrefix(rest, "-") {
		d, err := ParseDelay(name, rest[1:])
		switch {
		case err != nil || rest[1:] == "" || rest[1] == '+' || rest[1] == '-':
			return 0, syntax()
		case d != 0:
			return 0, violation("%s: %s is negative", name, quote(v))
		}
		return 0, nil // "-0", "-0s": zero
	}
	var days time.Duration
	if i := strings.IndexByte(rest, 'd'); i > 0 && isDigits(rest[:i]) {
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || n > maxDays {
			return 0, violation("%s: %s is out of range (at most %dd)", name, quote(v), maxDays)
		}
		days, rest = time.Duration(n)*24*time.Hour, rest[i+1:]
		if rest == "" {
			return days, nil
		}
	}
	var d time.Duration
	if isSeconds(rest) {
		f, err := strconv.ParseFloat(rest, 64)
		if err != nil || f*float64(time.Second) >= float64(math.MaxInt64) {
			return 0, violation("%s: %s is out of range", name, quote(v))
		}
		d = time.Duration(f * float64(time.Second))
	} else {
		var err error
		d, err = time.ParseDuration(rest)
		if err != nil || rest == "" || rest[0] == '+' || rest[0] == '-' {
			return 0, syntax()
		}
	}
	if d > math.MaxInt64-days {
		return 0, violation("%s: %s is out of range", name, quote(v))
	}
	return days + d, nil
}

// CheckDelay refuses a delay d over maxDelay (0: the default) or negative.
func CheckDelay(name string, d, maxDelay time.Duration) error {
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	switch {
	case d < 0:
		return violation("%s: %v is negative", name, d)
	case d > maxDelay:
		return violation("%s: %v is over the maximum delay %v", name, d, maxDelay)
	}
	return nil
}

// CheckAhead refuses a due time (unix ms) more than maxDelay (0: the
// default) after now.
func CheckAhead(name string, ms int64, now time.Time, maxDelay time.Duration) error {
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	if ms-now.UnixMilli() > maxDelay.Milliseconds() {
		return violation("%s: due %s, more than the maximum delay %v ahead", name, FormatTime(ms), maxDelay)
	}
	return nil
}

// ParseTime reads a time of a filter or a range (delayctl's time flags,
// the HTTP API's list filters): unix ms, RFC 3339 (any precision, any
// zone), a date (UTC midnight), "now", or a delay (ParseDelay's syntax)
// relative to now, signed: "-1h", "+30m", "-2d", "-1d12h". It is not
// before 1970; unlike a due time it may be any time after.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return time.Time{}, fmt.Errorf("empty")
	case s == "now":
		return now, nil
	case isDigits(s):
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is out of range for unix ms", s)
		}
		return time.UnixMilli(ms).UTC(), nil
	case s[0] == '+' || s[0] == '-':
		rest := s[1:]
		d, err := ParseDelay("", rest)
		if err != nil || rest == "" || rest[0] == '-' || rest[0] == '+' {
			return time.Time{}, fmt.Errorf("%q: %s", s, timeSyntax)
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
		if t.UnixMilli() < 0 {
			return time.Time{}, fmt.Errorf("%q is before 1970", s)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: %s", s, timeSyntax)
}

// timeSyntax is ParseTime's syntax, for its reasons.
const timeSyntax = "not RFC 3339, a date, unix ms, now, or a relative time like -1h, +30m, -2d"

package payload

import (
	"time"
)

// HeaderExpireAfter is how late a task may still be delivered: a Go
// duration or seconds, above zero. A task the scanner would deliver later
// than its exec_at plus that goes to the failed topic with delay-error
// "expired" instead (a topic's default expiry applies when it has none).
// It passes through like any header.
const HeaderExpireAfter = "delay-expire-after"

// ExpireAfter returns the task's delay-expire-after; ok is false when it
// has none. Decode refuses a task whose value does not parse, given once.
func ExpireAfter(hs []Header) (d time.Duration, ok bool, err error) {
	for _, h := range hs {
		if h.Key != HeaderExpireAfter {
			continue
		}
		if ok {
			return 0, false, violation("%s: header given more than once", HeaderExpireAfter)
		}
		d, err = ParseDelay(HeaderExpireAfter, string(h.Value))
		if err != nil || d <= 0 {
			return 0, false, violation("%s: %s is not a Go duration or seconds above zero", HeaderExpireAfter, quote(h.Value))
		}
		ok = true
	}
	return d, ok, nil
}

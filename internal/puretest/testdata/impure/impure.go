package impure

import "time"

// Late reads the clock and starts a goroutine: Source must report both.
func Late(f func()) time.Time {
	go f()
	return time.Now()
}

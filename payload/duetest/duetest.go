package duetest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq/payload"
)

// MaxDelay is the maximum delay the cases assume: delayd's default.
const MaxDelay = payload.DefaultMaxDelay

// Fields a case sets, with the rest of the task it is part of.
const (
	// FieldAt is the due time: delay-at, "at", --at, Task.At.
	FieldAt = "at"
	// FieldAfter is the delay: delay-after, "after", --after, Task.After.
	FieldAfter = "after"
	// FieldEvery is the interval of a series due after 1m with a count
	// of 3: delay-every, "every", --every, Task.Every.
	FieldEvery = "every"
	// FieldUntil ends a series due after 1m, every 1h: delay-until,
	// "until", --until, Task.Until.
	FieldUntil = "until"
	// FieldExpireAfter is the expiry of a task due after 1m:
	// delay-expire-after, "expire_after", -H delay-expire-after=,
	// Task.ExpireAfter.
	FieldExpireAfter = "expire_after"
	// FieldNone is a task with no due time at all (Value unused).
	FieldNone = "none"
)

// Case is one input and its verdict.
type Case struct {
	Name  string `json:"name"`
	Field string `json:"field"`
	Value string `json:"value"`
	// Reason is a substring of every front door's reason for refusing
	// the case; empty: every front door accepts it.
	Reason string `json:"reason"`
	// NotGo: the Go client's types cannot express the input (a string
	// that is no duration, or a zero that means "none" there); its test
	// skips the case.
	NotGo bool `json:"not_go"`
}

//go:embed testdata/cases.json
var table []byte

// Cases returns the table.
func Cases() []Case {
	var cs []Case
	if err := json.Unmarshal(table, &cs); err != nil {
		panic(fmt.Sprintf("duetest: testdata/cases.json: %v", err))
	}
	return cs
}

// Time returns a FieldAt or FieldUntil value as a Go time the way a Go
// caller would have made it: digits with time.UnixMilli (so unix seconds
// become January 1970), else RFC 3339.
func Time(v string) (time.Time, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.UnixMilli(n), nil
	}
	return time.Parse(time.RFC3339Nano, v)
}

// Duration returns a delay value as a Go duration: payload.ParseDelay's
// syntax, negative with a leading "-".
func Duration(v string) (time.Duration, error) {
	if rest, ok := strings.CutPrefix(v, "-"); ok {
		d, err := payload.ParseDelay("", rest)
		return -d, err
	}
	return payload.ParseDelay("", v)
}

package tenant

import (
	"errors"
	"fmt"

	"github.com/delayq/delayq/topics"
)

// Default is the tenant of today's deployment: today's topics and ids.
const Default = "default"

// MaxNameLen is the longest tenant name.
const MaxNameLen = 40

// ErrName is wrapped by CheckName's error.
var ErrName = errors.New("tenant: invalid name")

// Valid reports whether name is a tenant name: 1 to MaxNameLen
// characters of [a-z0-9-].
func Valid(name string) bool {
	if name == "" || len(name) > MaxNameLen {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// CheckName returns an error wrapping ErrName unless Valid(name).
func CheckName(name string) error {
	if !Valid(name) {
		return fmt.Errorf("%w %q: 1 to %d characters of a-z, 0-9 and -", ErrName, name, MaxNameLen)
	}
	return nil
}

// Today's topics, the Default tenant's.
const (
	inputTopic  = topics.Input
	slowTopic   = topics.Slow
	failedTopic = topics.Failed
	scanTopic   = topics.Scan
)

// Topics are a tenant's own topics: where its producers submit, where
// its far-future bulk goes, and where its refusals and failures go.
type Topics struct {
	Input  string `json:"input"`
	Slow   string `json:"slow"`
	Failed string `json:"failed"`
}

// TopicsOf returns the topics of tenant: today's for Default,
// delay-input.{tenant}, delay-input-slow.{tenant} and
// delay-failed.{tenant} for any other. Check the name first (Valid).
func TopicsOf(tenant string) Topics {
	if tenant == Default {
		return Topics{Input: inputTopic, Slow: slowTopic, Failed: failedTopic}
	}
	return Topics{Input: inputTopic + "." + tenant, Slow: slowTopic + "." + tenant, Failed: failedTopic + "." + tenant}
}

// OfInput returns the tenant whose input or slow topic is topic, and
// whether it is one: Default for today's topics.
func OfInput(topic string) (string, bool) {
	switch topic {
	case inputTopic, slowTopic:
		return Default, true
	}
	for _, base := range []string{inputTopic, slowTopic} {
		if t, ok := cutDot(topic, base); ok {
			return t, true
		}
	}
	return "", false
}

// cutDot returns t when topic is base.t and t is a valid tenant other
// than Default (whose topics have no suffix).
func cutDot(topic, base string) (string, bool) {
	if len(topic) <= len(base)+1 || topic[:len(base)] != base || topic[len(base)] != '.' {
		return "", false
	}
	t := topic[len(base)+1:]
	return t, Valid(t) && t != Default
}

// own reports whether topic is one of delayq's own topics, of any tenant.
func own(topic string) bool {
	switch topic {
	case inputTopic, slowTopic, failedTopic, scanTopic:
		return true
	}
	for _, base := range []string{inputTopic, slowTopic, failedTopic} {
		if len(topic) > len(base) && topic[:len(base)+1] == base+"." {
			return true
		}
	}
	return false
}

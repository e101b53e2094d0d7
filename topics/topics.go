package topics

import (
	"errors"
	"fmt"
	"strings"
)

// delayq's own topics.
const (
	Input  = "delay-input"      // tasks and cancels from producers
	Slow   = "delay-input-slow" // the same, read at a limited rate
	Scan   = "delay-scan"       // scan tasks from the dispatcher
	Failed = "delay-failed"     // input that broke the contract
)

// Internal reports whether topic is a Kafka internal topic (`__*`), one of
// delayq's own, or a well-known internal topic of the systems that run
// beside Kafka (Schema Registry's `_schemas`, Confluent's `_confluent-*`,
// Kafka Connect's `connect-configs`, `connect-offsets`, `connect-status`);
// tasks are never delivered to such a topic, whatever --allow-topics says.
func Internal(topic string) bool {
	switch topic {
	case Input, Slow, Scan, Failed, "_schemas", "connect-configs", "connect-offsets", "connect-status":
		return true
	}
	return strings.HasPrefix(topic, "__") || strings.HasPrefix(topic, "_confluent-")
}

// Restricted reports whether topic has a name other systems use for their
// own topics (`_*`, `connect-*`). The default allow-list (Allow with no
// patterns) refuses such a topic; a pattern that names it allows it.
func Restricted(topic string) bool {
	return strings.HasPrefix(topic, "_") || strings.HasPrefix(topic, "connect-")
}

// Allow returns the allow-list of --allow-topics: whether tasks may name a
// business topic. A pattern is an exact name (`orders`) or a prefix ending
// in `*` (`orders.*`; `*` alone matches every name). Without patterns
// every topic is allowed but the Restricted ones. Internal topics are
// never allowed. Check the patterns with CheckPatterns first.
func Allow(patterns []string) func(string) bool {
	exact := make(map[string]bool, len(patterns))
	var prefixes []string
	for _, p := range patterns {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			prefixes = append(prefixes, pre)
		} else {
			exact[p] = true
		}
	}
	return func(topic string) bool {
		switch {
		case Internal(topic):
			return false
		case len(patterns) == 0:
			return !Restricted(topic)
		case exact[topic]:
			return true
		}
		for _, pre := range prefixes {
			if strings.HasPrefix(topic, pre) {
				return true
			}
		}
		return false
	}
}

// CheckPatterns reports every pattern of an allow-list (see Allow) that
// is not a legal topic name, optionally followed by one `*`.
func CheckPatterns(patterns []string) error {
	var errs []error
	for _, p := range patterns {
		pre, _ := strings.CutSuffix(p, "*")
		if p != "*" && !Legal(pre) {
			errs = append(errs, fmt.Errorf("topics: allow pattern %q is not a topic name or a prefix ending in *", p))
		}
	}
	return errors.Join(errs...)
}

// Legal applies Kafka's topic name rule: 1 to 249 characters of
// [a-zA-Z0-9._-], and neither "." nor "..".
func Legal(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

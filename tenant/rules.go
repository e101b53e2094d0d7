package tenant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/delayq/delayq/topics"
)

// ErrRules is wrapped by the errors of Decode and Validate.
var ErrRules = errors.New("tenant: invalid rules")

// Rules are a tenant's rules, the body of PUT /v1/tenants/{tenant}:
//
//	{"topics": ["orders", "billing-"], "max_delay": "720h", "max_pending": 1000000,
//	 "submit_per_second": 5000, "max_payload_bytes": 1048576}
//
// Every field is optional. Absent or zero limits are no limit.
type Rules struct {
	// Topics are the destination topics the tenant may write: names, and
	// prefixes ending in "-" ("billing-" allows billing-eu and billing-).
	// Absent (nil): no list of the tenant's own (the deployment's
	// --allow-topics still applies), written as null; [] allows no topic.
	Topics []string `json:"topics"`
	// MaxDelay is the longest delay a task may ask for, a Go duration.
	MaxDelay Duration `json:"max_delay,omitempty"`
	// MaxPending is the most tasks the tenant may have pending.
	MaxPending int64 `json:"max_pending,omitempty"`
	// SubmitPerSecond is the most input messages a second (Bucket).
	SubmitPerSecond int `json:"submit_per_second,omitempty"`
	// MaxPayloadBytes is the largest payload (the message value) a task
	// may carry.
	MaxPayloadBytes int `json:"max_payload_bytes,omitempty"`
}

// Duration is a time.Duration written in JSON as a Go duration string
// ("720h").
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("max_delay: want a duration string such as \"720h\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("max_delay: %w", err)
	}
	*d = Duration(v)
	return nil
}

// Decode reads one JSON object of Rules from b, refusing unknown fields
// and anything after the object, and validates it.
func Decode(b []byte) (Rules, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Rules
	if err := dec.Decode(&r); err != nil {
		return Rules{}, fmt.Errorf("%w: %w", ErrRules, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Rules{}, fmt.Errorf("%w: data after the object", ErrRules)
	}
	if err := r.Validate(); err != nil {
		return Rules{}, err
	}
	return r, nil
}

// Validate reports every problem of r at once: a topic entry that is not
// a Kafka topic name (or prefix), that names one of delayq's own topics or
// a Kafka internal one, a repeated entry, a negative limit.
func (r Rules) Validate() error {
	var errs []error
	seen := make(map[string]bool, len(r.Topics))
	for _, p := range r.Topics {
		switch {
		case !topics.Legal(p):
			errs = append(errs, fmt.Errorf("topics: %q is not a topic name or a prefix ending in -", p))
		case own(p) || strings.HasPrefix(p, "__"):
			errs = append(errs, fmt.Errorf("topics: %q is an internal topic", p))
		case seen[p]:
			errs = append(errs, fmt.Errorf("topics: %q is listed twice", p))
		}
		seen[p] = true
	}
	for _, l := range []struct {
		name string
		v    int64
	}{{"max_delay", int64(r.MaxDelay)}, {"max_pending", r.MaxPending},
		{"submit_per_second", int64(r.SubmitPerSecond)}, {"max_payload_bytes", int64(r.MaxPayloadBytes)}} {
		if l.v < 0 {
			errs = append(errs, fmt.Errorf("%s: negative", l.name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrRules, err)
	}
	return nil
}

// MayWrite reports whether a tenant with rules r may name topic as a
// task's destination: never one of delayq's own topics (any tenant's) or a
// Kafka internal one (__*); otherwise any topic without a list, else an
// exact name of the list or a topic starting with one of its prefixes.
// The deployment's --allow-topics applies as well (the caller's).
func (r Rules) MayWrite(topic string) bool {
	switch {
	case !topics.Legal(topic) || own(topic) || strings.HasPrefix(topic, "__"):
		return false
	case r.Topics == nil:
		return true
	}
	for _, p := range r.Topics {
		if p == topic || strings.HasSuffix(p, "-") && strings.HasPrefix(topic, p) {
			return true
		}
	}
	return false
}

// CheckDelay refuses a task due delay after its submit when that is over
// MaxDelay; the error says by how much.
func (r Rules) CheckDelay(delay time.Duration) error {
	if r.MaxDelay > 0 && delay > time.Duration(r.MaxDelay) {
		return fmt.Errorf("max_delay %s: a delay of %s is longer", time.Duration(r.MaxDelay), delay)
	}
	return nil
}

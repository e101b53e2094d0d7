package payload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq/topics"
)

// ErrContract is wrapped by every Decode error: the input message breaks the
// wire contract and belongs on delay-failed, with the error text (the reason)
// in its delay-error header.
var ErrContract = errors.New("payload: contract violation")

// Decode defaults.
const (
	DefaultMaxDelay   = 720 * time.Hour
	DefaultMaxPayload = 1 << 20
	// MaxNameLen is the longest delay-id accepted, in bytes.
	MaxNameLen = 128
	// MaxHeaders is the most headers an input message may carry.
	MaxHeaders = 256
	// HeaderOverhead is what each header counts towards MaxPayload beside
	// its key and value: an empty header is not free to keep.
	HeaderOverhead = 32
)

// DecodeConfig holds the limits Decode enforces. The zero value means the
// defaults.
type DecodeConfig struct {
	// MaxDelay is the longest accepted delay from now (default 720h).
	MaxDelay time.Duration
	// MaxPayload bounds the bytes of key + value + header keys and values,
	// each header counting HeaderOverhead more (default 1 MiB).
	MaxPayload int
	// AllowTopic reports whether a business topic may be delivered to
	// (topics.Allow builds it from --allow-topics). nil is the default
	// allow-list, topics.Allow(nil): any topic but those named like other
	// systems' own (`_*`, `connect-*`). Internal topics (topics.Internal:
	// `__*`, delayq's four, `_schemas`, `_confluent-*`, Kafka Connect's)
	// are never allowed.
	AllowTopic func(string) bool
}

func (c *DecodeConfig) setDefaults() {
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
}

// Validate reports every invalid field at once.
func (c DecodeConfig) Validate() error {
	var errs []error
	if c.MaxDelay < 0 {
		errs = append(errs, fmt.Errorf("payload: MaxDelay %v is negative", c.MaxDelay))
	}
	if c.MaxPayload < 0 {
		errs = append(errs, fmt.Errorf("payload: MaxPayload %d is negative", c.MaxPayload))
	}
	return errors.Join(errs...)
}

// contractError reads as its reason and wraps ErrContract.
type contractError struct{ reason string }

func (e *contractError) Error() string { return e.reason }
func (e *contractError) Unwrap() error { return ErrContract }

func violation(format string, args ...any) error {
	return &contractError{reason: fmt.Sprintf(format, args...)}
}

// Decode turns an input record into a Task. now is the reference for
// validation (the maximum delay). Errors wrap ErrContract and read as a
// reason, e.g. `delay-at: "tomorrow" is not RFC 3339 or unix ms`.
//
// Rules: delay-topic is required (optional for a cancel) and must be allowed;
// exactly one of delay-at (RFC 3339 or unix ms) and delay-after (a Go
// duration, optionally led by whole days, or seconds, >= 0: ParseDelay);
// the due time may be in the past (due at once) but not before MinDueTime,
// 1973-03-03 (ParseDueTime: delay-at "0" or 1970-01-01T00:00:00Z is a
// producer's unset field, a smaller number unix seconds, not milliseconds,
// and the reason says so) and not more than MaxDelay after now;
// delay-after counts from the record timestamp (m.Time), so a record without one (zero, or at or before the epoch: a
// producer that set none; kafka-go sends 0 for a zero kafka.Message.Time) is
// refused rather than timed by this process's clock, which would make a
// re-read a second task; delay-id is optional, 1..128 bytes; delay-op is
// absent, "cancel", "reschedule" or "replace"; a cancel needs delay-id and takes
// delay-at (cancel that row) or no time at all (cancel by id alone,
// Control = ControlCancelID); a reschedule needs delay-id and exactly one of
// delay-at and delay-after, the new due time (Control = ControlReschedule,
// delay-topic optional and ignored); a replace (delay-op: replace) is a
// submit that needs delay-id and takes no recurrence header
// (Control = ControlReplace); each control
// header at most once; at most MaxHeaders headers; key + value + headers
// (HeaderOverhead bytes each beside key and value) at most MaxPayload bytes.
// Without delay-id the name is DerivedName(m.Topic, m.Partition, m.Offset).
// Control headers (and a stale delay-error) are not passed through, nor
// are provenance headers (Provenance: delay-source-*, delay-replay-of,
// delay-replay-source), which only delayq writes.
//
// Recurrence: delay-every (ParseDelay's syntax, >= MinEvery and at most
// MaxDelay) or delay-cron (five fields or a descriptor such as @daily; no
// TZ= prefix, no @every), not both; delay-tz (an IANA name, with
// delay-cron only; default UTC); delay-until (RFC 3339 or unix ms, a due
// time as ParseDueTime reads it, not before the first occurrence);
// delay-count (>= 1); delay-occurrence (>= 1, at most delay-count; default 1, for a series resumed from a
// delivered or failed message). Each at most once, none on a cancel, and
// the checked ones are kept in Task.Headers, delay-occurrence last (see
// Series). The first occurrence is due at delay-at/delay-after; a cron gap
// over MaxDelay among the first 4 periods of the schedule is refused
// (checked once per spec and zone), and so is a delay-every under
// MinEndlessEvery without delay-count or delay-until. The occurrence
// numbered math.MaxInt64 is the last of its series.
func Decode(m Message, now time.Time, cfg DecodeConfig) (Task, error) {
	cfg.setDefaults()
	hs, err := splitHeaders(m, cfg.MaxPayload)
	if err != nil {
		return Task{}, err
	}
	t, err := decodeOp(hs.ctl[ctlOp])
	if err != nil {
		return Task{}, err
	}
	if err := decodeTopic(&t, hs.ctl[ctlTopic], cfg.AllowTopic); err != nil {
		return Task{}, err
	}
	if err := decodeDue(&t, hs.ctl[ctlAt], hs.ctl[ctlAfter], m.Time, now, cfg.MaxDelay); err != nil {
		return Task{}, err
	}
	if t.Cancel || t.Control != ControlNone {
		why := "an op acts on the series' pending occurrence"
		if t.Control == ControlReplace {
			why = "a replace stores a single task; cancel the id and submit a series under a new id"
		}
		for _, h := range hs.rec {
			if h != nil {
				return Task{}, violation("%s: not with %s %s (%s)", h.Key, HeaderOp, opName(t), why)
			}
		}
	} else {
		rs, err := decodeRecurrence(hs.rec, t.ExecAt, cfg.MaxDelay)
		if err != nil {
			return Task{}, err
		}
		hs.pass = append(hs.pass, rs...)
	}
	if err := decodeName(&t, hs.ctl[ctlID], m); err != nil {
		return Task{}, err
	}
	if t.Control == ControlCancelID || t.Control == ControlReschedule {
		t.Topic = "" // a reschedule keeps its task's topic; a cancel has none
	}
	if _, _, err := ExpireAfter(hs.pass); err != nil {
		return Task{}, err
	}
	if carriesTask(t) {
		t.Key = m.Key
		t.Value = m.Value
		t.Headers = hs.pass
	}
	return t, nil
}

// inputHeaders are the headers of an input message sorted by role.
type inputHeaders struct {
	ctl  [numControl]*Header // control headers, by ctl* index
	rec  [numRecur]*Header   // recurrence headers, by recurIndex
	pass []Header            // the rest, delivered with the task
}

// splitHeaders sorts the headers of m, drops provenance headers, and
// enforces MaxHeaders, each control and recurrence header at most once and
// the maxPayload bound.
func splitHeaders(m Message, maxPayload int) (inputHeaders, error) {
	var hs inputHeaders
	if n := len(m.Headers); n > MaxHeaders {
		return hs, violation("headers: %d headers, over the limit of %d", n, MaxHeaders)
	}
	size := len(m.Key) + len(m.Value)
	for i := range m.Headers {
		h := &m.Headers[i]
		size += len(h.Key) + len(h.Value) + HeaderOverhead
		var slot **Header
		switch r, c := recurIndex(h.Key), controlIndex(h.Key); {
		case Provenance(h.Key):
			continue // only delayq writes these (see Provenance)
		case r >= 0:
			slot = &hs.rec[r]
		case c >= 0:
			slot = &hs.ctl[c]
		default:
			hs.pass = append(hs.pass, *h)
			continue
		}
		if *slot != nil {
			return hs, violation("%s: header given more than once", h.Key)
		}
		*slot = h
	}
	if size > maxPayload {
		return hs, violation("payload: %d bytes of key, value and headers (%d bytes each beside key and value), over the %d-byte limit",
			size, HeaderOverhead, maxPayload)
	}
	return hs, nil
}

// CheckLimits applies Decode's bounds on an input message as a whole, for
// producers that check before they send (the Go client): at most
// MaxHeaders headers, each control and recurrence header at most once,
// key + value + headers (HeaderOverhead bytes each beside key and value)
// at most DefaultMaxPayload bytes, delayd's bound. Errors wrap ErrContract
// and read as delay-failed's reason would.
func CheckLimits(m Message) error {
	_, err := splitHeaders(m, DefaultMaxPayload)
	return err
}

// decodeOp returns the Task that delay-op (h, nil when absent) makes.
func decodeOp(h *Header) (Task, error) {
	var t Task
	if h == nil {
		return t, nil
	}
	switch op := string(h.Value); op {
	case OpCancel:
		t.Cancel = true
	case OpReschedule:
		t.Control = ControlReschedule
	case OpReplace:
		t.Control = ControlReplace
	default:
		return Task{}, violation("%s: unknown op %s (want %q, %q or %q)", HeaderOp, quote(h.Value), OpCancel, OpReschedule, OpReplace)
	}
	return t, nil
}

// carriesTask: t is a submit or a replace, a task to store.
func carriesTask(t Task) bool {
	return !t.Cancel && (t.Control == ControlNone || t.Control == ControlReplace)
}

// decodeTopic sets t.Topic from delay-topic (h), required unless t is an op.
func decodeTopic(t *Task, h *Header, allow func(string) bool) error {
	if h == nil {
		if carriesTask(*t) {
			return violation("%s: missing", HeaderTopic)
		}
		return nil
	}
	topic := string(h.Value)
	if err := checkTopic(topic, allow); err != nil {
		return err
	}
	t.Topic = topic
	return nil
}

// decodeDue sets t.ExecAt from delay-at or delay-after (at, after; nil
// when absent), and turns a cancel without a time into a cancel by id.
// recorded is the record timestamp delay-after counts from.
func decodeDue(t *Task, at, after *Header, recorded, now time.Time, maxDelay time.Duration) error {
	switch {
	case at != nil && after != nil:
		return violation("%s and %s: give exactly one, not both", HeaderAt, HeaderAfter)
	case t.Cancel && after != nil:
		return violation("%s: cancel takes %s (the task's due time) or no time at all, not %s", HeaderOp, HeaderAt, HeaderAfter)
	case t.Cancel && at == nil:
		// Cancel by id alone: ingest finds the due time in the id row.
		t.Cancel, t.Control = false, ControlCancelID
		return nil
	case at != nil:
		ms, err := parseAt(at.Value)
		if err != nil {
			return err
		}
		t.ExecAt = ms
		submitted := recorded
		if submitted.UnixMilli() <= 0 {
			submitted = now
		}
		t.PastDue = !t.Cancel && ms < submitted.UnixMilli()
	case after != nil:
		ms, err := dueAfter(after, recorded, maxDelay)
		if err != nil {
			return err
		}
		t.ExecAt = ms
	default:
		return violation("%s or %s is required: give exactly one (%s: 0 is due now)", HeaderAt, HeaderAfter, HeaderAfter)
	}
	when := HeaderAt
	if after != nil {
		when = HeaderAfter
	}
	return CheckAhead(when, t.ExecAt, now, maxDelay)
}

// dueAfter returns the due time delay-after (h) names: the record
// timestamp plus its delay.
func dueAfter(h *Header, recorded time.Time, maxDelay time.Duration) (int64, error) {
	d, err := parseAfter(h.Value)
	if err != nil {
		return 0, err
	}
	if err := CheckDelay(HeaderAfter, d, maxDelay); err != nil {
		return 0, err
	}
	if recorded.IsZero() || recorded.UnixMilli() <= 0 {
		return 0, violation("%s needs a record timestamp (producer sent none); set one or use %s", HeaderAfter, HeaderAt)
	}
	ms := recorded.Add(d).UnixMilli()
	if ms <= 0 { // overflowed: a record timestamp near the end of time
		return 0, violation("%s: %s after the record timestamp is out of range", HeaderAfter, quote(h.Value))
	}
	return ms, nil
}

// decodeName sets t.Name and t.ID from delay-id (h), required for an op,
// else derived from where m was read.
func decodeName(t *Task, h *Header, m Message) error {
	switch {
	case h != nil && len(h.Value) == 0:
		return violation("%s: empty", HeaderID)
	case h != nil && len(h.Value) > MaxNameLen:
		return violation("%s: %d bytes, over the %d-byte limit", HeaderID, len(h.Value), MaxNameLen)
	case h != nil:
		t.Name = string(h.Value)
	case t.Cancel || t.Control != ControlNone:
		return violation("%s: %s needs %s", HeaderOp, opName(*t), HeaderID)
	default:
		t.Name = DerivedName(m.Topic, m.Partition, m.Offset)
	}
	t.ID = TaskID(t.Name)
	return nil
}

// Provenance reports whether key is a header that says where a message
// came from, which only delayq writes: delay-source-* (ingest, on the
// failed topic) and delay-replay-of, delay-replay-source (replay, on the
// input). Decode drops them from input, so no stored task, delivery or
// failed message carries one a producer set, and replay can trust those
// of a failed message.
func Provenance(key string) bool {
	return strings.HasPrefix(key, "delay-source-") || key == "delay-replay-of" || key == "delay-replay-source"
}

func opName(t Task) string {
	switch t.Control {
	case ControlReschedule:
		return OpReschedule
	case ControlReplace:
		return OpReplace
	}
	return OpCancel
}

// Control headers, by index into Decode's table.
const (
	ctlTopic = iota
	ctlAt
	ctlAfter
	ctlID
	ctlOp
	ctlError
	numControl
)

func controlIndex(key string) int {
	if !strings.HasPrefix(key, "delay-") {
		return -1
	}
	switch key {
	case HeaderTopic:
		return ctlTopic
	case HeaderAt:
		return ctlAt
	case HeaderAfter:
		return ctlAfter
	case HeaderID:
		return ctlID
	case HeaderOp:
		return ctlOp
	case HeaderError:
		return ctlError
	}
	return -1
}

func checkTopic(topic string, allow func(string) bool) error {
	switch {
	case topic == "":
		return violation("%s: empty", HeaderTopic)
	case !topics.Legal(topic):
		return violation("%s: %s is not a legal Kafka topic name", HeaderTopic, quote([]byte(topic)))
	case topics.Internal(topic):
		return violation("%s: %s is an internal topic", HeaderTopic, quote([]byte(topic)))
	case allow == nil && topics.Restricted(topic):
		return violation("%s: %s is not allowed: names starting with _ or connect- need --allow-topics", HeaderTopic, quote([]byte(topic)))
	case allow != nil && !allow(topic):
		return violation("%s: %s is not allowed", HeaderTopic, quote([]byte(topic)))
	}
	return nil
}

// parseAt reads delay-at: unix milliseconds (decimal digits) or RFC 3339,
// at or after MinDueTime (ParseDueTime).
func parseAt(v []byte) (int64, error) { return ParseDueTime(HeaderAt, string(v)) }

// parseAfter reads delay-after: ParseDelay's syntax.
func parseAfter(v []byte) (time.Duration, error) { return ParseDelay(HeaderAfter, string(v)) }

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isSeconds matches digits with an optional fraction: "90", "1.5".
func isSeconds(s string) bool {
	whole, frac, dot := strings.Cut(s, ".")
	return whole != "" && isDigits(whole) && (!dot || frac != "" && isDigits(frac))
}

// quote renders a header value for a reason: quoted, at most 64 bytes.
func quote(v []byte) string {
	const limit = 64
	if len(v) > limit {
		return strconv.Quote(string(v[:limit])) + "..."
	}
	return strconv.Quote(string(v))
}

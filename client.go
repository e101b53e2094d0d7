package delayq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/snowflake"
	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"

	"github.com/delayq/delayq/internal/version"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// Defaults of Config.
const (
	DefaultSlowAfter    = time.Hour
	DefaultBatchTimeout = 5 * time.Millisecond
	// MaxNode is the largest snowflake node id.
	MaxNode = 1023
)

var (
	// ErrInvalid is wrapped by the errors of Submit, Cancel, CancelByID
	// and Reschedule for a request that breaks the delay contract; nothing
	// was written.
	ErrInvalid = errors.New("delayq: invalid task")
	// ErrClosed is returned by Submit and Cancel after Close.
	ErrClosed = errors.New("delayq: client closed")
)

// Config configures a Client. The zero value means the defaults.
type Config struct {
	// Brokers are the Kafka bootstrap addresses (default 127.0.0.1:9092).
	Brokers []string
	// TLS, when set, connects to the brokers with TLS (a CA in RootCAs, a
	// client certificate in Certificates for mutual TLS). SASL, when set,
	// authenticates with it: plain.Mechanism or scram.Mechanism of
	// github.com/segmentio/kafka-go/sasl. A refused login or a failed TLS
	// handshake comes back as an error that says so (*kafkaauth.Error).
	TLS  *tls.Config
	SASL sasl.Mechanism
	// Node is the snowflake node id, 0..1023, of the ids the client makes
	// for tasks without an ID (default 0). It must be unique per running
	// process among all processes that submit tasks at the same time.
	Node int64
	// SlowAfter: a task due more than this after now goes to the slow input
	// topic (default 1 h; negative: never).
	SlowAfter time.Duration
	// Input and Slow are the input topics (default delay-input and
	// delay-input-slow). Only tests and unusual deployments change them.
	Input string
	Slow  string
	// BatchTimeout is how long the writer waits to fill a batch (default
	// 5 ms): the latency of a lone Submit.
	BatchTimeout time.Duration
	// MaxDelay is the longest delay delayd accepts, its --max-delay
	// (default 720h, delayd's default). A task, reschedule or cancel due
	// further ahead, or recurring at a longer interval, is refused with
	// ErrInvalid before anything is written, as delayd would refuse it
	// (payload.CheckAhead, payload.CheckDelay). Set it to delayd's
	// --max-delay when that is not the default.
	MaxDelay time.Duration
	// Now is the clock that After and MaxDelay count from (nil:
	// time.Now); delayctl passes its own, so that both judge a time alike.
	Now func() time.Time
	// Logger receives kafka-go's error log (nil: discard).
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if len(c.Brokers) == 0 {
		c.Brokers = []string{admin.DefaultBroker}
	}
	if c.SlowAfter == 0 {
		c.SlowAfter = DefaultSlowAfter
	}
	if c.Input == "" {
		c.Input = topics.Input
	}
	if c.Slow == "" {
		c.Slow = topics.Slow
	}
	if c.BatchTimeout == 0 {
		c.BatchTimeout = DefaultBatchTimeout
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = payload.DefaultMaxDelay
	}
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	if c.Node < 0 || c.Node > MaxNode {
		errs = append(errs, fmt.Errorf("delayq: Node %d out of range 0..%d", c.Node, MaxNode))
	}
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			errs = append(errs, fmt.Errorf("delayq: broker %q is not host:port", b))
		}
	}
	if c.BatchTimeout < 0 {
		errs = append(errs, fmt.Errorf("delayq: BatchTimeout %v is negative", c.BatchTimeout))
	}
	if c.MaxDelay < 0 {
		errs = append(errs, fmt.Errorf("delayq: MaxDelay %v is negative", c.MaxDelay))
	}
	return errors.Join(errs...)
}

// Task is a message to deliver later.
type Task struct {
	// ID names the task (delay-id), up to 128 bytes. Empty: the client makes
	// a snowflake id. Same ID and same due time is one task.
	ID string
	// Topic is the business topic to deliver to. Required.
	Topic string
	// At is the due time (millisecond precision), not before 1973-03-03
	// (payload.MinDueTime: an earlier one is unix seconds read as
	// milliseconds, time.UnixMilli(secs), and is refused). When it is
	// zero, the task is due After from now; both zero means due now (the
	// Go zero value; the wire, the HTTP API and delayctl need a time, and
	// "0s" there). Give at most one; neither more than Config.MaxDelay
	// ahead.
	At    time.Time
	After time.Duration
	// Key, Value and Headers are delivered byte for byte. Headers must not
	// use the control names delay-topic, delay-at, delay-after, delay-id,
	// delay-op or delay-error. Recurrence headers (delay-every …) among
	// them are checked as Decode would, together with the fields below;
	// give each once, as a header or a field.
	Key     []byte
	Value   []byte
	Headers []kafka.Header

	// Every or Cron (not both) make the task recur: the first occurrence
	// is due at At/After, the next ones every Every (at least 1 s) or on
	// the five-field cron schedule Cron (or a descriptor such as "@daily")
	// in the IANA zone TZ (default UTC). Until (zero: none) and Count (0:
	// no limit) end the series. Each occurrence is delivered with a
	// delay-occurrence header (1, 2, …); CancelByID stops the series.
	Every time.Duration
	Cron  string
	TZ    string
	Until time.Time
	Count int

	// ExpireAfter (zero: none, or the topic's default) is how late the
	// task may still be delivered: later than its due time plus that, it
	// goes to delay-failed with delay-error "expired" instead
	// (delay-expire-after). Give it as the field or as a
	// delay-expire-after header, not both (Decode refuses the pair).
	ExpireAfter time.Duration
}

// Receipt identifies a submitted task: Cancel(ctx, r.ID, r.At) cancels it.
type Receipt struct {
	ID    string    // the delay-id, given or made
	At    time.Time // the due time, UTC, whole milliseconds
	Input string    // the input topic the task was written to
}

// Client submits and cancels tasks.
type Client struct {
	cfg    Config
	node   *snowflake.Node
	auth   *kafkaauth.Auth // nil: plaintext
	w      *kafka.Writer
	once   sync.Once
	mu     sync.RWMutex // guards closed against in-flight writes
	closed bool
	now    func() time.Time
}

// snowflakeMu serializes snowflake.NewNode, which writes package variables.
var snowflakeMu sync.Mutex

// New returns a client. It does not connect: the first Submit or Cancel
// does.
func New(cfg Config) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	snowflakeMu.Lock()
	node, err := snowflake.NewNode(cfg.Node)
	snowflakeMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("delayq: snowflake node %d: %w", cfg.Node, err)
	}
	auth := kafkaauth.New(cfg.TLS, cfg.SASL)
	w := producer.New(producer.Config{
		Brokers:      cfg.Brokers,
		Auth:         auth,
		BatchTimeout: cfg.BatchTimeout,
		Logger:       cfg.Logger,
		ClientID:     version.Get().ClientID("delayq-go"),
	})
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Client{cfg: cfg, node: node, auth: auth, w: w, now: now}, nil
}

// NewID returns a fresh snowflake id as the decimal string Submit would use.
func (c *Client) NewID() string { return c.node.Generate().String() }

// Submit writes t to delayq's input (the slow one when t is due more than
// Config.SlowAfter from now) and returns once the brokers have it. Invalid
// tasks fail with an error wrapping ErrInvalid before anything is written.
func (c *Client) Submit(ctx context.Context, t Task) (Receipt, error) {
	m, r, err := c.Message(t)
	if err != nil {
		return Receipt{}, err
	}
	if err := c.Send(ctx, m); err != nil {
		return Receipt{}, fmt.Errorf("delayq: submit %s to %s: %w", r.ID, r.Input, err)
	}
	return r, nil
}

// Message returns the input message Submit would write for t now, and its
// receipt, without writing it: for callers that check it first (the HTTP
// API runs delayd's own validation on it) and then Send it.
func (c *Client) Message(t Task) (kafka.Message, Receipt, error) {
	now := c.now()
	at, err := checkTask(t, now, c.cfg.MaxDelay)
	if err != nil {
		return kafka.Message{}, Receipt{}, err
	}
	id := t.ID
	if id == "" {
		id = c.NewID()
	}
	input := c.cfg.Input
	if c.cfg.SlowAfter >= 0 && at.Sub(now) > c.cfg.SlowAfter {
		input = c.cfg.Slow
	}
	headers := make([]kafka.Header, 0, len(t.Headers)+8)
	headers = append(headers, t.Headers...)
	headers = append(headers,
		kafka.Header{Key: payload.HeaderTopic, Value: []byte(t.Topic)},
		kafka.Header{Key: payload.HeaderAt, Value: unixMilli(at)},
		kafka.Header{Key: payload.HeaderID, Value: []byte(id)},
	)
	headers = append(headers, recurrence(t)...)
	headers = append(headers, expiry(t)...)
	m := kafka.Message{Topic: input, Key: t.Key, Value: t.Value, Headers: headers, Time: now}
	if err := payload.CheckLimits(record.ToMessage(m)); err != nil {
		return kafka.Message{}, Receipt{}, invalid([]string{err.Error()})
	}
	return m, Receipt{ID: id, At: at, Input: input}, nil
}

// Send writes m (built by Message) and returns once the brokers have it.
func (c *Client) Send(ctx context.Context, m kafka.Message) error { return c.write(ctx, m) }

// SendAll writes ms (built by Message) in one produce call and returns
// once the brokers have every one. On an error some may be written:
// writing them again is harmless (the same id and due time is one task).
func (c *Client) SendAll(ctx context.Context, ms []kafka.Message) error { return c.write(ctx, ms...) }

// Cancel cancels the task with this id and due time (the pair a Receipt
// holds). A cancel wins whichever of the two delayq reads first; cancelling
// a task that does not exist or is already delivered is harmless. at is
// truncated to milliseconds.
func (c *Client) Cancel(ctx context.Context, id string, at time.Time) error {
	m, err := c.cancelMessage(id, at)
	if err != nil {
		return err
	}
	return c.sendOp(ctx, m)
}

// cancelMessage returns the message Cancel writes, or why it writes none.
func (c *Client) cancelMessage(id string, at time.Time) (kafka.Message, error) {
	var reasons []string
	reasons = checkID(reasons, id)
	if id == "" {
		reasons = append(reasons, "a cancel needs the task id")
	}
	if at.IsZero() {
		reasons = append(reasons, "a cancel needs the task's due time (at)")
	} else {
		reasons = checkDue(reasons, "at", at, c.now(), c.cfg.MaxDelay)
	}
	if err := invalid(reasons); err != nil {
		return kafka.Message{}, err
	}
	return c.opMessage(payload.OpCancel, id, at), nil
}

// CancelByID cancels the task with this id whatever its due time
// (delay-op: cancel without delay-at). It wins whichever of the two delayq
// reads first, stops a task that was rescheduled, and keeps cancelling the
// id: a task submitted later with it is cancelled too, for delayd's
// --max-delay + --retention, whether or not a task of the id was stored
// before. Cancelling a delivered id is harmless.
func (c *Client) CancelByID(ctx context.Context, id string) error {
	m, err := c.cancelByIDMessage(id)
	if err != nil {
		return err
	}
	return c.sendOp(ctx, m)
}

// cancelByIDMessage returns the message CancelByID writes, or why it
// writes none.
func (c *Client) cancelByIDMessage(id string) (kafka.Message, error) {
	if err := checkOpID(id, payload.OpCancel); err != nil {
		return kafka.Message{}, err
	}
	return c.opMessage(payload.OpCancel, id, time.Time{}), nil
}

// Reschedule moves the pending task with this id to at (truncated to
// milliseconds), keeping its key, value and headers: the old time is not
// delivered, the new one is. It returns once the brokers have the request;
// delayq applies it asynchronously and sends it to delay-failed, with a
// delay-error reason, when it cannot apply: the id is cancelled, already
// due, or unknown (no task of that id submitted within ingest's
// RescheduleGrace, 30 s by default, after the request: reported when that
// grace ends). It never moves a task submitted that long after it. at
// must not be before 1973-03-03 (time.UnixMilli of unix seconds) nor more
// than Config.MaxDelay ahead: ErrInvalid, nothing written. Reschedules of one id go to one partition, in order; the last
// one wins.
func (c *Client) Reschedule(ctx context.Context, id string, at time.Time) error {
	m, err := c.rescheduleMessage(id, at)
	if err != nil {
		return err
	}
	return c.sendOp(ctx, m)
}

// rescheduleMessage returns the message Reschedule writes, or why it
// writes none.
func (c *Client) rescheduleMessage(id string, at time.Time) (kafka.Message, error) {
	err := checkOpID(id, payload.OpReschedule)
	if err == nil && at.IsZero() {
		err = invalid([]string{"a reschedule needs the new due time (at)"})
	} else if err == nil {
		err = invalid(checkDue(nil, "at", at, c.now(), c.cfg.MaxDelay))
	}
	if err != nil {
		return kafka.Message{}, err
	}
	return c.opMessage(payload.OpReschedule, id, at), nil
}

// Replace stores t in place of the task with the id t.ID (required): new
// value, key, headers and due time, under the same id. The old task is
// never delivered and the new one is delivered once, whichever of the two
// delayq reads first: a replace supersedes every task of its id recorded
// before it (by record timestamp), and a later reschedule moves the new
// task. A replace of an id with no task stored acts as a submit; one of an
// id cancelled by id alone (CancelByID) goes to delay-failed with the
// reason. t must not recur (Every, Cron, …): cancel the id and submit a
// series under a new one. Like Submit, it returns once the brokers have
// the message; the Receipt's At is the new due time.
func (c *Client) Replace(ctx context.Context, t Task) (Receipt, error) {
	m, r, err := c.replaceMessage(t)
	if err != nil {
		return Receipt{}, err
	}
	if err := c.Send(ctx, m); err != nil {
		return Receipt{}, fmt.Errorf("delayq: replace %s to %s: %w", r.ID, r.Input, err)
	}
	return r, nil
}

// replaceMessage returns the message Replace writes and its receipt, or
// why it writes none.
func (c *Client) replaceMessage(t Task) (kafka.Message, Receipt, error) {
	err := checkOpID(t.ID, payload.OpReplace)
	recurs := slices.ContainsFunc(t.Headers, func(h kafka.Header) bool {
		return h.Key == payload.HeaderEvery || h.Key == payload.HeaderCron
	})
	if err == nil && (recurs || t.Every != 0 || t.Cron != "" || t.TZ != "" || !t.Until.IsZero() || t.Count != 0) {
		err = invalid([]string{"a replace stores a single task: no Every, Cron, TZ, Until or Count"})
	}
	if err != nil {
		return kafka.Message{}, Receipt{}, err
	}
	m, r, err := c.Message(t)
	if err != nil {
		return kafka.Message{}, Receipt{}, err
	}
	m.Headers = append(m.Headers, kafka.Header{Key: payload.HeaderOp, Value: []byte(payload.OpReplace)})
	if err := payload.CheckLimits(record.ToMessage(m)); err != nil {
		return kafka.Message{}, Receipt{}, invalid([]string{err.Error()})
	}
	return m, r, nil
}

// opMessage returns the message of the op (cancel or reschedule) of id on
// the input topic, keyed by id so that the ops of one id stay in order; a
// zero at sends no delay-at (cancel by id).
func (c *Client) opMessage(op, id string, at time.Time) kafka.Message {
	m := kafka.Message{
		Topic: c.cfg.Input,
		Key:   []byte(id),
		Headers: []kafka.Header{
			{Key: payload.HeaderOp, Value: []byte(op)},
			{Key: payload.HeaderID, Value: []byte(id)},
		},
		Time: c.now(),
	}
	if !at.IsZero() {
		m.Headers = append(m.Headers, kafka.Header{Key: payload.HeaderAt, Value: unixMilli(at)})
	}
	return m
}

// sendOp writes m, an op built by opMessage.
func (c *Client) sendOp(ctx context.Context, m kafka.Message) error {
	if err := c.write(ctx, m); err != nil {
		return fmt.Errorf("delayq: %s %s to %s: %w", m.Headers[0].Value, m.Key, m.Topic, err)
	}
	return nil
}

func checkOpID(id, op string) error {
	reasons := checkID(nil, id)
	if id == "" {
		reasons = append(reasons, "a "+op+" needs the task id")
	}
	return invalid(reasons)
}

// Close flushes pending writes and closes the connections. It is
// idempotent; Submit and Cancel fail with ErrClosed afterwards.
func (c *Client) Close() error {
	var err error
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		err = c.w.Close()
		c.auth.Close()
	})
	return err
}

func (c *Client) write(ctx context.Context, ms ...kafka.Message) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	return c.auth.Explain(c.w.WriteMessages(ctx, ms...))
}

// checkTask validates t and returns its due time, truncated to milliseconds.
// The rules of times and delays are payload's, as delayd applies them.
func checkTask(t Task, now time.Time, maxDelay time.Duration) (time.Time, error) {
	var reasons []string
	switch {
	case t.Topic == "":
		reasons = append(reasons, "topic is empty")
	case !topics.Legal(t.Topic):
		reasons = append(reasons, fmt.Sprintf("topic %q is not a legal Kafka topic name", t.Topic))
	case topics.Internal(t.Topic):
		reasons = append(reasons, fmt.Sprintf("topic %q is an internal topic", t.Topic))
	}
	reasons = checkID(reasons, t.ID)
	at := t.At
	switch {
	case !t.At.IsZero() && t.After != 0:
		reasons = append(reasons, "give At or After, not both")
	case t.At.IsZero():
		if err := payload.CheckDelay("After", t.After, maxDelay); err != nil {
			reasons = append(reasons, err.Error())
		}
		at = now.Add(t.After)
	default:
		reasons = checkDue(reasons, "At", t.At, now, maxDelay)
	}

	for _, h := range t.Headers {
		if control(h.Key) {
			reasons = append(reasons, fmt.Sprintf("header %q is a delay control header", h.Key))
		}
	}
	if t.ExpireAfter < 0 {
		reasons = append(reasons, fmt.Sprintf("ExpireAfter %v is negative", t.ExpireAfter))
	}
	// Decode counts the field and a delay-expire-after header as two.
	if _, _, err := payload.ExpireAfter(record.ToHeaders(append(slices.Clip(t.Headers), expiry(t)...))); err != nil {
		reasons = append(reasons, err.Error())
	}
	var untilErr error
	if !t.Until.IsZero() {
		untilErr = payload.CheckSecondsTime("Until", t.Until)
	}
	if t.Count < 0 {
		reasons = append(reasons, fmt.Sprintf("Count %d is negative", t.Count))
	} else if untilErr != nil {
		reasons = append(reasons, untilErr.Error())
	} else if err := payload.CheckRecurrence(record.ToHeaders(append(slices.Clip(t.Headers), recurrence(t)...)), at.UnixMilli(), maxDelay); err != nil {
		reasons = append(reasons, err.Error())
	}
	return time.UnixMilli(at.UnixMilli()).UTC(), invalid(reasons)
}

// recurrence returns the recurrence headers of t: none unless Every or
// Cron is set (a lone TZ, Until or Count is sent too, to be refused).
func recurrence(t Task) []kafka.Header {
	var hs []kafka.Header
	add := func(k, v string) { hs = append(hs, kafka.Header{Key: k, Value: []byte(v)}) }
	if t.Every != 0 {
		add(payload.HeaderEvery, t.Every.String())
	}
	if t.Cron != "" {
		add(payload.HeaderCron, t.Cron)
	}
	if t.TZ != "" {
		add(payload.HeaderTZ, t.TZ)
	}
	if !t.Until.IsZero() {
		add(payload.HeaderUntil, string(unixMilli(t.Until)))
	}
	if t.Count != 0 {
		add(payload.HeaderCount, strconv.Itoa(t.Count))
	}
	return hs
}

// expiry returns the delay-expire-after header of t.ExpireAfter: none
// unless it is above zero.
func expiry(t Task) []kafka.Header {
	if t.ExpireAfter <= 0 {
		return nil
	}
	return []kafka.Header{{Key: payload.HeaderExpireAfter, Value: []byte(t.ExpireAfter.String())}}
}

// checkDue adds the reasons to refuse the due time at (named name): before
// payload.MinDueTime, or more than maxDelay after now.
func checkDue(reasons []string, name string, at, now time.Time, maxDelay time.Duration) []string {
	if err := payload.CheckSecondsTime(name, at); err != nil {
		return append(reasons, err.Error())
	}
	if err := payload.CheckAhead(name, at.UnixMilli(), now, maxDelay); err != nil {
		return append(reasons, err.Error())
	}
	return reasons
}

func checkID(reasons []string, id string) []string {
	if len(id) > payload.MaxNameLen {
		reasons = append(reasons, fmt.Sprintf("id is %d bytes, over the %d-byte limit", len(id), payload.MaxNameLen))
	}
	return reasons
}

func invalid(reasons []string) error {
	if len(reasons) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(reasons, "; "))
}

func control(key string) bool {
	switch key {
	case payload.HeaderTopic, payload.HeaderAt, payload.HeaderAfter,
		payload.HeaderID, payload.HeaderOp, payload.HeaderError:
		return true
	}
	return false
}

func unixMilli(t time.Time) []byte {
	return strconv.AppendInt(nil, t.UnixMilli(), 10)
}

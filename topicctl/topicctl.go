package topicctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// All names every topic in Pause and Resume.
const All = "*"

// Defaults of Config.
const (
	DefaultPrefix  = "delayq"
	DefaultRefresh = 200 * time.Millisecond
)

// ErrTopic is wrapped when a topic name is not a legal business topic.
var ErrTopic = errors.New("topicctl: not a business topic")

// Config configures a Store. Zero values mean the documented default.
type Config struct {
	// Prefix of every key; the index's prefix (zset.Config.Prefix).
	// Default "delayq".
	Prefix string
	// Refresh is how long Controls keeps a snapshot: how soon a change
	// reaches every scanner. Default 200ms.
	Refresh time.Duration
}

// Control is what operators set for one topic.
type Control struct {
	Paused      bool          // hold its due tasks back
	Rate        int           // deliveries per second across all instances; 0: unlimited
	ExpireAfter time.Duration // default of delay-expire-after; 0: none
}

// Holds reports whether the topic's due tasks go through its held zset.
func (c Control) Holds() bool { return c.Paused || c.Rate > 0 }

// Snapshot is the controls of every topic at one time.
type Snapshot struct {
	AllPaused bool
	Topics    map[string]Control
}

// Of returns topic's control, paused when all topics are.
func (s Snapshot) Of(topic string) Control {
	c := s.Topics[topic]
	c.Paused = c.Paused || s.AllPaused
	return c
}

// Status is a topic as GET /v1/topics shows it.
type Status struct {
	Topic   string
	Control Control // its own, without AllPaused
	Held    int64   // due tasks held back
}

// State is "paused" (its own pause, or allPaused), "limited" (a rate) or
// "active": what the API, delayctl and the console show.
func (s Status) State(allPaused bool) string {
	switch {
	case s.Control.Paused || allPaused:
		return "paused"
	case s.Control.Rate > 0:
		return "limited"
	}
	return "active"
}

// Store reads and writes the controls and the held tasks. It is safe for
// concurrent use.
type Store struct {
	client  redis.UniversalClient
	prefix  string
	refresh time.Duration

	mu     sync.Mutex
	cached Snapshot
	at     time.Time
}

// New returns a Store on client.
func New(client redis.UniversalClient, cfg Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("topicctl: redis client is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	return &Store{client: client, prefix: cfg.Prefix, refresh: cfg.Refresh}, nil
}

func (s *Store) key(parts ...string) string {
	return s.prefix + ":" + strings.Join(parts, ":")
}

// Check refuses a name that cannot be a business topic (All is allowed
// only where allowAll).
func Check(topic string, allowAll bool) error {
	if topic == All && allowAll {
		return nil
	}
	if !topics.Legal(topic) || topics.Internal(topic) {
		return fmt.Errorf("%w: %q", ErrTopic, topic)
	}
	return nil
}

// Pause pauses topic (All: every topic).
func (s *Store) Pause(ctx context.Context, topic string) error {
	if err := Check(topic, true); err != nil {
		return err
	}
	return s.write(ctx, "pause", s.client.HSet(ctx, s.key("topics", "paused"), topic, "1").Err())
}

// Resume resumes topic. Resume(All) resumes every topic: it clears the
// pause of all topics and every topic's own pause.
func (s *Store) Resume(ctx context.Context, topic string) error {
	if err := Check(topic, true); err != nil {
		return err
	}
	if topic == All {
		return s.write(ctx, "resume", s.client.Del(ctx, s.key("topics", "paused")).Err())
	}
	return s.write(ctx, "resume", s.client.HDel(ctx, s.key("topics", "paused"), topic).Err())
}

// SetRate limits topic to perSecond deliveries a second (0: unlimited).
func (s *Store) SetRate(ctx context.Context, topic string, perSecond int) error {
	if err := Check(topic, false); err != nil {
		return err
	}
	if perSecond < 0 {
		return fmt.Errorf("topicctl: rate %d is negative", perSecond)
	}
	k := s.key("topics", "rate")
	if perSecond == 0 {
		return s.write(ctx, "rate", s.client.HDel(ctx, k, topic).Err())
	}
	return s.write(ctx, "rate", s.client.HSet(ctx, k, topic, perSecond).Err())
}

// SetExpireAfter sets topic's default expiry (0: none).
func (s *Store) SetExpireAfter(ctx context.Context, topic string, d time.Duration) error {
	if err := Check(topic, false); err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("topicctl: expire-after %v is negative", d)
	}
	k := s.key("topics", "expire")
	if d == 0 {
		return s.write(ctx, "expire-after", s.client.HDel(ctx, k, topic).Err())
	}
	return s.write(ctx, "expire-after", s.client.HSet(ctx, k, topic, d.Milliseconds()).Err())
}

func (s *Store) write(_ context.Context, what string, err error) error {
	if err != nil {
		return fmt.Errorf("topicctl: %s: %w", what, err)
	}
	s.mu.Lock()
	s.at = time.Time{} // this process sees its own change at once
	s.mu.Unlock()
	return nil
}

// Read reads the controls from Redis, uncached.
func (s *Store) Read(ctx context.Context) (Snapshot, error) {
	pipe := s.client.Pipeline()
	paused := pipe.HGetAll(ctx, s.key("topics", "paused"))
	rate := pipe.HGetAll(ctx, s.key("topics", "rate"))
	expire := pipe.HGetAll(ctx, s.key("topics", "expire"))
	if _, err := pipe.Exec(ctx); err != nil {
		return Snapshot{}, fmt.Errorf("topicctl: read controls: %w", err)
	}
	sn := Snapshot{Topics: map[string]Control{}}
	for t := range paused.Val() {
		if t == All {
			sn.AllPaused = true
			continue
		}
		c := sn.Topics[t]
		c.Paused = true
		sn.Topics[t] = c
	}
	for t, v := range rate.Val() {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			continue // not written by SetRate: unlimited
		}
		c := sn.Topics[t]
		c.Rate = n
		sn.Topics[t] = c
	}
	for t, v := range expire.Val() {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			continue
		}
		c := sn.Topics[t]
		c.ExpireAfter = time.Duration(ms) * time.Millisecond
		sn.Topics[t] = c
	}
	return sn, nil
}

// Controls returns the controls, read at most Refresh ago.
func (s *Store) Controls(ctx context.Context) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && time.Since(s.at) < s.refresh {
		return s.cached, nil
	}
	sn, err := s.Read(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	s.cached, s.at = sn, time.Now()
	return sn, nil
}

// List returns the status of every topic with a control or held tasks,
// sorted by name, and whether all topics are paused.
func (s *Store) List(ctx context.Context) ([]Status, bool, error) {
	sn, err := s.Read(ctx)
	if err != nil {
		return nil, false, err
	}
	held, err := s.HeldTopics(ctx)
	if err != nil {
		return nil, false, err
	}
	names := slices.Collect(func(yield func(string) bool) {
		for t := range sn.Topics {
			if !yield(t) {
				return
			}
		}
	})
	names = append(names, held...)
	slices.Sort(names)
	names = slices.Compact(names)
	pipe := s.client.Pipeline()
	cards := make([]*redis.IntCmd, len(names))
	for i, t := range names {
		cards[i] = pipe.ZCard(ctx, s.heldKey(t))
	}
	if len(names) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, false, fmt.Errorf("topicctl: count held: %w", err)
		}
	}
	out := make([]Status, len(names))
	for i, t := range names {
		out[i] = Status{Topic: t, Control: sn.Topics[t], Held: cards[i].Val()}
	}
	return out, sn.AllPaused, nil
}

func (s *Store) heldKey(topic string) string { return s.key("held", topic) }

func member(r payload.Ref) string {
	return strconv.FormatUint(r.ID, 10) + "@" + strconv.FormatInt(r.ExecAt, 10)
}

func parseMember(m string) (payload.Ref, error) {
	id, at, ok := strings.Cut(m, "@")
	if !ok {
		return payload.Ref{}, fmt.Errorf("topicctl: held member %q", m)
	}
	i, err1 := strconv.ParseUint(id, 10, 63)
	a, err2 := strconv.ParseInt(at, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return payload.Ref{}, fmt.Errorf("topicctl: held member %q: %w", m, err)
	}
	return payload.Ref{ID: i, ExecAt: a}, nil
}

// Hold adds refs to topic's held zset, then the topic to the registry.
// It is idempotent.
func (s *Store) Hold(ctx context.Context, topic string, refs []payload.Ref) error {
	if len(refs) == 0 {
		return nil
	}
	zs := make([]redis.Z, len(refs))
	for i, r := range refs {
		zs[i] = redis.Z{Score: float64(r.ExecAt), Member: member(r)}
	}
	for chunk := range slices.Chunk(zs, maxArgs) {
		if err := s.client.ZAdd(ctx, s.heldKey(topic), chunk...).Err(); err != nil {
			return fmt.Errorf("topicctl: hold %d tasks of %s: %w", len(refs), topic, err)
		}
	}
	if err := s.client.SAdd(ctx, s.key("held"), topic).Err(); err != nil {
		return fmt.Errorf("topicctl: register held topic %s: %w", topic, err)
	}
	return nil
}

// maxArgs caps the arguments of a command (zset.MaxArgs).
const maxArgs = 4000

// HeldTopics returns the topics that may have held tasks.
func (s *Store) HeldTopics(ctx context.Context) ([]string, error) {
	ts, err := s.client.SMembers(ctx, s.key("held")).Result()
	if err != nil {
		return nil, fmt.Errorf("topicctl: held topics: %w", err)
	}
	slices.Sort(ts)
	return ts, nil
}

// Held returns up to n held tasks of topic due at or before until, lowest
// exec_at first.
func (s *Store) Held(ctx context.Context, topic string, until int64, n int) ([]payload.Ref, error) {
	ms, err := s.client.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: s.heldKey(topic), Start: "-inf", Stop: strconv.FormatInt(until, 10), ByScore: true, Count: int64(n),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("topicctl: read held tasks of %s: %w", topic, err)
	}
	refs := make([]payload.Ref, 0, len(ms))
	for _, m := range ms {
		r, err := parseMember(m)
		if err != nil {
			return nil, err
		}
		refs = append(refs, r)
	}
	return refs, nil
}

// Release removes refs, delivered or dropped, from topic's held zset.
func (s *Store) Release(ctx context.Context, topic string, refs []payload.Ref) error {
	ms := make([]any, len(refs))
	for i, r := range refs {
		ms[i] = member(r)
	}
	for chunk := range slices.Chunk(ms, maxArgs) {
		if err := s.client.ZRem(ctx, s.heldKey(topic), chunk...).Err(); err != nil {
			return fmt.Errorf("topicctl: release %d tasks of %s: %w", len(refs), topic, err)
		}
	}
	return nil
}

// Forget drops topic from the registry when its held zset is empty,
// then looks again and registers it back if a Hold came in between, or
// if it cannot tell (the second look failed). It needs no fence
// (internal/fence): it writes only the registry, never a held task, and
// decides from what it reads itself, so a caller paused anywhere in it,
// past its lease, leaves the topic registered whenever tasks are held
// (TestForgetPaused). A fence checked between its SREM and the second
// look would strand them. What it cannot cover is a process that dies
// between the two, with a Hold of the topic's tasks (another instance's,
// after its step found the topic paused or rate-limited) landing in the
// same moment: those tasks wait for the topic's next Hold.
func (s *Store) Forget(ctx context.Context, topic string) error {
	n, err := s.client.ZCard(ctx, s.heldKey(topic)).Result()
	if err != nil || n > 0 {
		return err
	}
	if err := s.client.SRem(ctx, s.key("held"), topic).Err(); err != nil {
		return fmt.Errorf("topicctl: forget %s: %w", topic, err)
	}
	if n, err = s.client.ZCard(ctx, s.heldKey(topic)).Result(); err != nil || n > 0 {
		err = errors.Join(err, s.client.SAdd(ctx, s.key("held"), topic).Err())
	}
	if err != nil {
		return fmt.Errorf("topicctl: forget %s: %w", topic, err)
	}
	return nil
}

package redisconn

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
)

// DefaultWaitTimeout is how long one WAIT of Replicas blocks for the
// replicas' acknowledgements before it reports too few: under go-redis's
// 3 s read timeout, so a slow replica shows as ErrTooFewReplicas, not as a
// broken connection.
const DefaultWaitTimeout = time.Second

// ErrTooFewReplicas is returned by Replicas.Wait when fewer replicas than
// asked acknowledged the writes in time (a replica down or lagging).
var ErrTooFewReplicas = errors.New("redisconn: too few replicas acknowledged the writes")

// Replicas waits until the writes that the masters of a Redis deployment
// acknowledged so far have reached replicas. WAIT counts the replicas that
// acknowledged the replication offset of the last write of its own
// connection, so Wait writes a marker key on each master and WAITs behind
// it on the same connection: a replica that holds the marker holds every
// write the master acknowledged before it, from any connection.
//
// A Redis Cluster has a marker key per master, on a slot that master
// owns; a single Redis or the master of a Sentinel setup has one. The
// markers expire after a minute.
type Replicas struct {
	rdb     redis.UniversalClient
	prefix  string
	n       int
	timeout time.Duration

	mu   sync.Mutex
	keys map[string]string // Redis Cluster: master address -> its marker key
}

// NewReplicas returns a Replicas that waits for n replicas of every master
// of rdb, each WAIT bounded by timeout (0: DefaultWaitTimeout); its marker
// keys start with prefix.
func NewReplicas(rdb redis.UniversalClient, prefix string, n int, timeout time.Duration) *Replicas {
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	return &Replicas{rdb: rdb, prefix: prefix, n: n, timeout: timeout}
}

// Mark names the masters rdb writes to now: their replication ids, which
// a replica promoted to master replaces. Two equal marks mean that no
// master was replaced in between (a write acknowledged by a master that
// died before its replica had it is lost with it).
func (r *Replicas) Mark(ctx context.Context) (string, error) {
	return r.each(ctx, func(ctx context.Context, c *redis.Client) (string, error) {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return "", fmt.Errorf("info replication: %w", err)
		}
		return replID(info)
	})
}

// Wait writes a marker on every master, waits until n replicas of each
// acknowledged it, and returns the Mark of the masters it waited on. A
// caller that took a Mark before its writes and gets the same one back
// knows that its writes reached n replicas; a different one means a
// master was replaced in between, and the writes must be made again.
func (r *Replicas) Wait(ctx context.Context) (string, error) {
	mark, err := r.each(ctx, func(ctx context.Context, c *redis.Client) (string, error) {
		key, err := r.key(ctx, c)
		if err != nil {
			return "", err
		}
		var wait *redis.Cmd
		var info *redis.StringCmd
		_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, strconv.FormatInt(time.Now().UnixMilli(), 10), time.Minute)
			wait = p.Do(ctx, "wait", r.n, r.timeout.Milliseconds())
			info = p.Info(ctx, "replication")
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("wait for %d replicas: %w", r.n, err)
		}
		got, err := wait.Int()
		if err != nil {
			return "", fmt.Errorf("wait for %d replicas: %w", r.n, err)
		}
		if got < r.n {
			return "", fmt.Errorf("%w: %d of %d within %v", ErrTooFewReplicas, got, r.n, r.timeout)
		}
		return replID(info.Val())
	})
	if err != nil {
		// A master replaced or a slot moved: find the masters and their
		// slots again before the next try.
		if cc, ok := r.rdb.(*redis.ClusterClient); ok {
			r.mu.Lock()
			r.keys = nil
			r.mu.Unlock()
			cc.ReloadState(ctx)
		}
	}
	return mark, err
}

// each calls fn on every master (concurrently on a Redis Cluster) and
// returns their results, sorted and joined.
func (r *Replicas) each(ctx context.Context, fn func(ctx context.Context, c *redis.Client) (string, error)) (string, error) {
	var mu sync.Mutex
	var ids []string
	err := ForEachMaster(ctx, r.rdb, func(ctx context.Context, c *redis.Client) error {
		id, err := fn(ctx, c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Options().Addr, err)
		}
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(ids)
	return strings.Join(ids, ","), nil
}

// key is the marker key of the master c: the prefix's on a single Redis,
// on a Redis Cluster one whose slot c owns (found by trying hash tags
// against the client's slot map, remembered until Wait fails).
func (r *Replicas) key(ctx context.Context, c *redis.Client) (string, error) {
	cc, ok := r.rdb.(*redis.ClusterClient)
	if !ok {
		return r.prefix + ":replicas", nil
	}
	addr := c.Options().Addr
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.keys[addr]; ok {
		return k, nil
	}
	if r.keys == nil {
		r.keys = map[string]string{}
	}
	// 16384 slots: 1<<16 tags find a master that owns a single slot with
	// a probability of 98 %, one with 100 slots for certain.
	for i := range 1 << 16 {
		k := r.prefix + ":replicas:{" + strconv.Itoa(i) + "}"
		m, err := cc.MasterForKey(ctx, k)
		if err != nil {
			return "", fmt.Errorf("master of %s: %w", k, err)
		}
		a := m.Options().Addr
		if _, ok := r.keys[a]; !ok {
			r.keys[a] = k
		}
		if a == addr {
			return k, nil
		}
	}
	return "", fmt.Errorf("no slot of master %s found in the cluster's slot map", addr)
}

// replID is the master_replid of an INFO replication reply, which must
// come from a master.
func replID(info string) (string, error) {
	var role, id string
	for line := range strings.Lines(info) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "role":
			role = v
		case "master_replid":
			id = v
		}
	}
	if role != "master" || id == "" {
		return "", fmt.Errorf("not a master (role %q, replid %q)", role, id)
	}
	return id, nil
}

package repair

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redisconn"
)

// Marker is what the generation hash {prefix}:generation holds.
type Marker struct {
	// ID names the index's generation: random, written when a repair
	// completes (or the first delayd found nothing to repair). A fresh or
	// flushed Redis lacks it.
	ID string
	// ReplID is the master_replid of the Redis that held the index when
	// the marker was last confirmed (on a Redis Cluster, of every master:
	// Replication.ID).
	ReplID string
	// Lost is when a loss was detected (unix ms) while its repair has not
	// completed; 0 otherwise.
	Lost int64
	// Cause says what the loss detection saw ("generation", "replid").
	Cause string
}

// Generation reads and writes the generation hash. Every call touches that
// one key, so a Redis Cluster serves it from one node.
type Generation struct {
	client redis.UniversalClient
	key    string
}

// NewGeneration returns the generation hash of the index under prefix.
func NewGeneration(client redis.UniversalClient, prefix string) *Generation {
	return &Generation{client: client, key: prefix + ":generation"}
}

// Key returns the hash's key.
func (g *Generation) Key() string { return g.key }

// Read returns the marker; the zero Marker when the hash is missing.
func (g *Generation) Read(ctx context.Context) (Marker, error) {
	h, err := g.client.HGetAll(ctx, g.key).Result()
	if err != nil {
		return Marker{}, fmt.Errorf("repair: read %s: %w", g.key, err)
	}
	lost, _ := strconv.ParseInt(h["lost"], 10, 64)
	return Marker{ID: h["id"], ReplID: h["replid"], Lost: lost, Cause: h["cause"]}, nil
}

// MarkLost records a loss detected at (unix ms) and its cause unless a
// loss is recorded already (the first detection stands: it bounds the
// repair's range), and returns the marker after.
func (g *Generation) MarkLost(ctx context.Context, at int64, cause string) (Marker, error) {
	pipe := g.client.Pipeline()
	pipe.HSetNX(ctx, g.key, "lost", at)
	pipe.HSetNX(ctx, g.key, "cause", cause)
	if _, err := pipe.Exec(ctx); err != nil {
		return Marker{}, fmt.Errorf("repair: mark %s lost: %w", g.key, err)
	}
	return g.Read(ctx)
}

// healScript closes the loss recorded at ARGV[1]: it writes the new
// generation (ARGV[2]) and replication id (ARGV[3]) and clears lost, but
// only while lost is still ARGV[1]. A Redis flushed again during the
// repair has no lost field (or a newer one): then nothing is written and
// the next check detects the new loss.
var healScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'lost') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'id', ARGV[2], 'replid', ARGV[3], 'since', ARGV[4])
redis.call('HDEL', KEYS[1], 'lost', 'cause')
return 1
`)

// Heal ends the loss recorded at lost with a new generation; it reports
// false when the hash no longer records that loss.
func (g *Generation) Heal(ctx context.Context, lost int64, replID string, now time.Time) (bool, error) {
	n, err := healScript.Run(ctx, g.client, []string{g.key},
		strconv.FormatInt(lost, 10), newID(), replID, now.UnixMilli()).Int()
	if err != nil {
		return false, fmt.Errorf("repair: heal %s: %w", g.key, err)
	}
	return n == 1, nil
}

// initScript writes the first generation (ARGV[1]) and replication id
// (ARGV[2]) of a hash that has neither an id nor a recorded loss.
var initScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'id') == 1 or redis.call('HEXISTS', KEYS[1], 'lost') == 1 then return 0 end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'replid', ARGV[2], 'since', ARGV[3])
return 1
`)

// Init records the first generation of an index known to be new, whose
// store holds nothing it lacks (WatchConfig.NewIndex); a hash that has an
// id or a recorded loss already is left as it is.
func (g *Generation) Init(ctx context.Context, replID string, now time.Time) error {
	if err := initScript.Run(ctx, g.client, []string{g.key}, newID(), replID, now.UnixMilli()).Err(); err != nil {
		return fmt.Errorf("repair: init %s: %w", g.key, err)
	}
	return nil
}

// SetReplID records the replication id of a marker written before it was
// known.
func (g *Generation) SetReplID(ctx context.Context, replID string) error {
	if err := g.client.HSet(ctx, g.key, "replid", replID).Err(); err != nil {
		return fmt.Errorf("repair: record replid in %s: %w", g.key, err)
	}
	return nil
}

// Replication is what INFO replication says of the masters a client
// writes to: their master_replid (ID) and master_replid2 (ID2), each
// list sorted by ID and joined with commas (one entry on a single Redis
// or a Sentinel master, one per master on a Redis Cluster). A replica
// promoted to master keeps its old master's id as its ID2; a master
// restarted from its files has a new ID and no ID2 (all zeros).
type Replication struct{ ID, ID2 string }

// lossSince says what the masters of r, compared with the ids recorded
// before (old, a Replication.ID), show of the index: causeReplID when one
// of them is a replica promoted since it followed a master among old (a
// failover: it may lack what that master acknowledged last), causeRestart
// when a master of old is gone otherwise (restarted from its files: with
// appendfsync everysec Redis answers writes it has not written to its AOF
// yet while an fsync is slow, up to 2 s of them, and an OS crash loses
// the last second; or removed from a cluster), "" when nothing was lost:
// the same masters, a master added, or nothing recorded before.
func (r Replication) lossSince(old string) string {
	if old == "" || r.ID == "" {
		return ""
	}
	olds := strings.Split(old, ",")
	for id2 := range strings.SplitSeq(r.ID2, ",") {
		if slices.Contains(olds, id2) {
			return causeReplID
		}
	}
	ids := strings.Split(r.ID, ",")
	for _, id := range olds {
		if !slices.Contains(ids, id) {
			return causeRestart
		}
	}
	return ""
}

// ReplID returns the replication ids of the masters client writes to:
// the one Redis (or Sentinel master), or every master of a Redis Cluster,
// so that a replica promoted in place of any of them shows. A server that
// refuses INFO replication (miniredis) has none: the zero Replication.
func ReplID(ctx context.Context, client redis.UniversalClient) (Replication, error) {
	type ids struct{ id, id2 string }
	var (
		mu      sync.Mutex
		masters []ids
		refused bool
	)
	err := redisconn.ForEachMaster(ctx, client, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "replication").Result()
		var rerr redis.Error
		if errors.As(err, &rerr) {
			mu.Lock()
			refused = true // a server without the section: no id to follow
			mu.Unlock()
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.Options().Addr, err)
		}
		var m ids
		for line := range strings.SplitSeq(info, "\n") {
			line = strings.TrimSpace(line)
			if v, ok := strings.CutPrefix(line, "master_replid:"); ok {
				m.id = v
			} else if v, ok := strings.CutPrefix(line, "master_replid2:"); ok {
				m.id2 = v
			}
		}
		mu.Lock()
		masters = append(masters, m)
		mu.Unlock()
		return nil
	})
	if err != nil {
		if cc, ok := client.(*redis.ClusterClient); ok {
			cc.ReloadState(ctx) // a master gone: ask the cluster for its masters again
		}
		return Replication{}, fmt.Errorf("repair: info replication: %w", err)
	}
	if refused {
		return Replication{}, nil
	}
	slices.SortFunc(masters, func(a, b ids) int { return strings.Compare(a.id, b.id) })
	var id, id2 []string
	for _, m := range masters {
		id, id2 = append(id, m.id), append(id2, m.id2)
	}
	return Replication{ID: strings.Join(id, ","), ID2: strings.Join(id2, ",")}, nil
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

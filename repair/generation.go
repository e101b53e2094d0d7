package repair

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Marker is what the generation hash {prefix}:generation holds.
type Marker struct {
	// ID names the index's generation: random, written when a repair
	// completes (or the first delayd found nothing to repair). A fresh or
	// flushed Redis lacks it.
	ID string
	// ReplID is the master_replid of the Redis that held the index when
	// the marker was last confirmed; empty on a Redis Cluster.
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

// SetReplID records the replication id of a marker written before it was
// known.
func (g *Generation) SetReplID(ctx context.Context, replID string) error {
	if err := g.client.HSet(ctx, g.key, "replid", replID).Err(); err != nil {
		return fmt.Errorf("repair: record replid in %s: %w", g.key, err)
	}
	return nil
}

// Replication is what INFO replication says of the Redis a client talks
// to: master_replid and master_replid2. A replica promoted to master keeps
// its old master's id as ID2; a master restarted from its files has a new
// ID and no ID2 (all zeros).
type Replication struct{ ID, ID2 string }

// promotedFrom reports whether r is a replica promoted since it followed
// a master of id old.
func (r Replication) promotedFrom(old string) bool { return old != "" && r.ID2 == old }

// ReplID returns the replication ids of the Redis client talks to; zero on
// a Redis Cluster (INFO would answer for one node of many) or a server
// that refuses INFO replication.
func ReplID(ctx context.Context, client redis.UniversalClient) (Replication, error) {
	c, ok := client.(*redis.Client)
	if !ok {
		return Replication{}, nil
	}
	info, err := c.Info(ctx, "replication").Result()
	var refused redis.Error
	if errors.As(err, &refused) {
		return Replication{}, nil // a server without the section (miniredis): no id to follow
	}
	if err != nil {
		return Replication{}, fmt.Errorf("repair: info replication: %w", err)
	}
	var r Replication
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "master_replid:"); ok {
			r.ID = v
		} else if v, ok := strings.CutPrefix(line, "master_replid2:"); ok {
			r.ID2 = v
		}
	}
	return r, nil
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

package producer

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
)

// partitionCache answers the one-topic metadata request kafka-go's Writer
// makes for every message it writes (to count the topic's partitions)
// from a per-topic copy of the last answer, at most ttl old. The Transport
// answers it from its own cache too, but filters a copy of the whole
// cluster's metadata per message: that was a noticeable share of a
// scanner's drain CPU (docs/performance.md). Only answers without an error
// are kept, so a topic created a moment ago is seen at once; a partition
// count change is seen within ttl. Every other request goes to next.
type partitionCache struct {
	next kafka.RoundTripper
	ttl  time.Duration

	mu     sync.RWMutex
	topics map[partitionKey]cachedMeta
}

// partitionKey needs no address: a cache serves one writer, whose
// requests all go to its Addr.
type partitionKey struct {
	topic      string
	autoCreate bool
}

type cachedMeta struct {
	res *metadataAPI.Response
	at  time.Time
}

func newPartitionCache(next kafka.RoundTripper, ttl time.Duration) *partitionCache {
	return &partitionCache{next: next, ttl: ttl, topics: map[partitionKey]cachedMeta{}}
}

// RoundTrip implements kafka.RoundTripper.
func (c *partitionCache) RoundTrip(ctx context.Context, addr net.Addr, req kafka.Request) (kafka.Response, error) {
	m, ok := req.(*metadataAPI.Request)
	if !ok || len(m.TopicNames) != 1 {
		return c.next.RoundTrip(ctx, addr, req)
	}
	k := partitionKey{topic: m.TopicNames[0], autoCreate: m.AllowAutoTopicCreation}
	now := time.Now()
	c.mu.RLock()
	e, ok := c.topics[k]
	c.mu.RUnlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.res, nil
	}
	r, err := c.next.RoundTrip(ctx, addr, req)
	if err != nil {
		return r, err
	}
	res, ok := r.(*metadataAPI.Response)
	if !ok || len(res.Topics) != 1 || res.Topics[0].Name != k.topic || res.Topics[0].ErrorCode != 0 {
		return r, nil
	}
	c.mu.Lock()
	c.topics[k] = cachedMeta{res: res, at: now}
	c.mu.Unlock()
	return r, nil
}

package topicctl

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// takeScript is a token bucket in the hash KEYS[1] (fields t: tokens,
// at: unix ms of the last refill): rate ARGV[1] a second, at most ARGV[2]
// tokens, now ARGV[3], asking for ARGV[4]. It returns the tokens granted.
var takeScript = redis.NewScript(`
local rate, burst, now, want = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local v = redis.call('HMGET', KEYS[1], 't', 'at')
local t, at = tonumber(v[1]), tonumber(v[2])
if t == nil or at == nil then t, at = burst, now end
if now > at then t = math.min(burst, t + (now - at) * rate / 1000) end
local got = math.min(want, math.floor(t))
if got < 0 then got = 0 end
redis.call('HSET', KEYS[1], 't', tostring(t - got), 'at', tostring(math.max(now, at)))
redis.call('PEXPIRE', KEYS[1], 60000)
return got
`)

// Burst is the share of a second's rate a bucket holds when full: a topic
// limited to N/s delivers at most N/4 at once after an idle time. It is
// also how long a release round may take without losing tokens.
const Burst = 4

// Take takes up to want tokens of topic's bucket at rate a second, shared
// by every instance, and returns how many it got.
func (s *Store) Take(ctx context.Context, topic string, rate, want int, now time.Time) (int, error) {
	burst := max(1, rate/Burst)
	n, err := takeScript.Run(ctx, s.client, []string{s.key("bucket", topic)},
		rate, burst, now.UnixMilli(), want).Int()
	if err != nil {
		return 0, fmt.Errorf("topicctl: take tokens of %s: %w", topic, err)
	}
	return n, nil
}

// leaseScript renews the lease KEYS[1] for ARGV[1] by ARGV[2] ms, or takes
// it when nobody holds it. It returns 1 when ARGV[1] holds it.
var leaseScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == false or cur == ARGV[1] then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return 1
end
return 0
`)

// Lease makes owner the one instance that releases topic for ttl, or
// reports false while another owner holds it.
func (s *Store) Lease(ctx context.Context, topic, owner string, ttl time.Duration) (bool, error) {
	n, err := leaseScript.Run(ctx, s.client, []string{s.key("lease", topic)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("topicctl: lease %s: %w", topic, err)
	}
	return n == 1, nil
}

// renewScript extends the lease KEYS[1] by ARGV[2] ms while ARGV[1] holds
// it, and returns 1; 0 when it lapsed or another owner holds it.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return 1
end
return 0
`)

// Renew extends owner's lease of topic by ttl, or reports false when owner
// no longer holds it: unlike Lease it never takes a lapsed lease, so an
// owner paused past its lease does not resume work that another may have
// done meanwhile.
func (s *Store) Renew(ctx context.Context, topic, owner string, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, s.client, []string{s.key("lease", topic)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("topicctl: renew lease %s: %w", topic, err)
	}
	return n == 1, nil
}

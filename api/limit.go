package api

import (
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// clients keeps a token bucket per client IP: Config.Rate requests a
// second, Config.Burst at once. It holds at most max clients: past that
// it forgets the clients whose bucket is full again (forgetting them
// changes nothing), or, when none is, one at random.
type clients struct {
	rate  rate.Limit
	burst int
	max   int
	idle  time.Duration // a bucket left alone this long is full again

	mu    sync.Mutex
	m     map[string]*client
	swept time.Time
}

type client struct {
	lim  *rate.Limiter
	seen time.Time
}

func newClients(perSecond float64, burst, max int) *clients {
	return &clients{
		rate: rate.Limit(perSecond), burst: burst, max: max,
		idle: time.Duration(float64(burst) / perSecond * float64(time.Second)),
		m:    map[string]*client{},
	}
}

// allow takes a token of remote's bucket (remote is a request's
// RemoteAddr) and reports whether there was one.
func (c *clients) allow(remote string, now time.Time) bool {
	ip, _, err := net.SplitHostPort(remote)
	if err != nil {
		ip = remote
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.m[ip]
	if !ok {
		if len(c.m) >= c.max {
			c.evict(now)
		}
		cl = &client{lim: rate.NewLimiter(c.rate, c.burst)}
		c.m[ip] = cl
	}
	cl.seen = now
	return cl.lim.AllowN(now, 1)
}

func (c *clients) evict(now time.Time) {
	if now.Sub(c.swept) >= time.Second { // a sweep walks every client: once a second at most
		c.swept = now
		for ip, cl := range c.m {
			if now.Sub(cl.seen) >= c.idle {
				delete(c.m, ip)
			}
		}
	}
	for ip := range c.m {
		if len(c.m) < c.max {
			break
		}
		delete(c.m, ip)
	}
}

func (c *clients) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

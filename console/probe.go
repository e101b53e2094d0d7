package console

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/payload"
)

// Status is the last probe result of one dependency.
type Status struct {
	Name      string  `json:"name"`
	Up        bool    `json:"up"`
	Error     string  `json:"error,omitempty"`
	LatencyMs float64 `json:"latency_ms"`
	CheckedAt int64   `json:"checked_at"` // unix ms
}

// prober runs the probes at most once per ttl and keeps the results.
type prober struct {
	ttl, timeout time.Duration
	now          func() time.Time

	mu     sync.Mutex // held while probing: concurrent callers share one round
	probes []Probe
	last   []Status
	at     time.Time
}

func (p *prober) set(probes []Probe) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probes, p.last, p.at = probes, nil, time.Time{}
}

// status returns the results of the probes, probing again when they are
// older than ttl. Probes run concurrently, each bounded by timeout.
func (p *prober) status(ctx context.Context) []Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.last != nil && now.Sub(p.at) < p.ttl {
		return p.last
	}
	out := make([]Status, len(p.probes))
	var wg sync.WaitGroup
	for i, pr := range p.probes {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, p.timeout)
			defer cancel()
			start := time.Now()
			err := pr.Check(pctx)
			st := Status{Name: pr.Name, Up: err == nil, LatencyMs: float64(time.Since(start).Microseconds()) / 1000, CheckedAt: now.UnixMilli()}
			if err != nil {
				st.Error = err.Error()
			}
			out[i] = st
		})
	}
	wg.Wait()
	if ctx.Err() == nil { // a caller that gave up does not poison the cache
		p.last, p.at = out, now
	}
	return out
}

// upDesc is delayq_dependency_up.
var upDesc = prometheus.NewDesc("delayq_dependency_up",
	"1 when the dependency answered delayd's last probe (Kafka metadata, Redis PING, a payload store read), else 0.",
	[]string{"dependency"}, nil)

// upCollector exports the probe results at scrape time.
type upCollector struct{ p *prober }

func (c upCollector) Describe(ch chan<- *prometheus.Desc) { ch <- upDesc }

func (c upCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.p.timeout+time.Second)
	defer cancel()
	for _, st := range c.p.status(ctx) {
		v := 0.0
		if st.Up {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, v, st.Name)
	}
}

// Pinger is a Redis client (redis.UniversalClient) as a probe sees it.
type Pinger interface {
	Ping(ctx context.Context) *redis.StatusCmd
}

// RedisProbe checks that Redis answers PING.
func RedisProbe(c Pinger) Probe {
	return Probe{Name: "redis", Check: func(ctx context.Context) error { return c.Ping(ctx).Err() }}
}

// StoreProbe checks that the payload store answers a read (of a row that
// does not exist), under the given name ("hbase", "memory").
func StoreProbe(name string, s Store) Probe {
	return Probe{Name: name, Check: func(ctx context.Context) error {
		_, err := s.Get(ctx, []payload.Ref{{ID: 0, ExecAt: 1}})
		return err
	}}
}

package load

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redisconn"
)

// Metric names read from delayd's /metrics.
const (
	metricAccepted  = "delayq_tasks_accepted_total"
	metricDelivered = "delayq_tasks_delivered_total"
	metricCPU       = "process_cpu_seconds_total"
	metricWonTicks  = `delayq_dispatch_ticks_total{result="won"}`
	metricTickSum   = "delayq_dispatch_seconds_sum"
	metricEmitSum   = `delayq_dispatch_seconds_sum{phase="emit"}`
	metricEmitCount = `delayq_dispatch_seconds_count{phase="emit"}`
)

// Scrape reads delayd's /metrics at addr (host:port) and returns the sum of
// every series of each name asked for.
func Scrape(ctx context.Context, client *http.Client, addr string, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	// Uncompressed: the run scrapes every pollEvery, and gzip made each
	// scrape cost delayd about 2 ms of CPU instead of 1.3 (on loopback the
	// bytes saved are free).
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape delayd metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape delayd metrics: %s", resp.Status)
	}
	return ParseMetrics(resp.Body, names...)
}

// ParseMetrics sums the samples of each named metric in Prometheus text
// format; a name without samples maps to 0. A name may carry one label
// selector, `name{label="value"}`: then only the series with that label
// value count.
func ParseMetrics(r io.Reader, names ...string) (map[string]float64, error) {
	out := make(map[string]float64, len(names))
	want := make(map[string]bool, len(names))
	selectors := make(map[string][][2]string) // name -> (selector, key)
	for _, n := range names {
		out[n] = 0
		if base, sel, ok := strings.Cut(n, "{"); ok {
			selectors[base] = append(selectors[base], [2]string{strings.TrimSuffix(sel, "}"), n})
			continue
		}
		want[n] = true
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, keys := sampleKeys(line, want, selectors)
		if len(keys) == 0 {
			continue
		}
		v, err := sampleValue(line, name)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			out[k] += v
		}
	}
	return out, sc.Err()
}

// sampleKeys returns the metric name of a sample line and the keys of
// ParseMetrics' result it adds to: the name when wanted whole, and every
// selector of the name that the line's labels match.
func sampleKeys(line string, want map[string]bool, selectors map[string][][2]string) (string, []string) {
	name := line
	if i := strings.IndexAny(line, "{ "); i >= 0 {
		name = line[:i]
	}
	var keys []string
	if want[name] {
		keys = append(keys, name)
	}
	if len(line) > len(name) && line[len(name)] == '{' {
		labels, _, _ := strings.Cut(line[len(name)+1:], "}")
		for _, sk := range selectors[name] {
			if slices.Contains(strings.Split(labels, ","), sk[0]) {
				keys = append(keys, sk[1])
			}
		}
	}
	return name, keys
}

// sampleValue returns the value of a sample line of metric name.
func sampleValue(line, name string) (float64, error) {
	// The value follows the last space (no timestamps in delayd's output;
	// label values may hold spaces, so cut after the closing brace).
	rest := line[len(name):]
	if j := strings.LastIndexByte(rest, '}'); j >= 0 {
		rest = rest[j+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return 0, fmt.Errorf("metrics: no value in %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, fmt.Errorf("metrics: %q: %w", line, err)
	}
	return v, nil
}

// UsedMemory returns Redis's used_memory (INFO memory), summed over the
// masters of a Redis Cluster.
func UsedMemory(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	var mu sync.Mutex
	var total int64
	err := redisconn.ForEachMaster(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		n, err := usedMemory(ctx, c)
		mu.Lock()
		total += n
		mu.Unlock()
		return err
	})
	return total, err
}

func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("redis info memory: %w", err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("redis info memory: no used_memory")
}

// scanKeys returns the keys matching pattern on every master of rdb.
func scanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var keys []string
	err := redisconn.ForEachMaster(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		var mine []string
		for iter.Next(ctx) {
			mine = append(mine, iter.Val())
		}
		mu.Lock()
		keys = append(keys, mine...)
		mu.Unlock()
		return iter.Err()
	})
	return keys, err
}

// ZsetCensus is what the zsets under a prefix hold.
type ZsetCensus struct {
	Zsets, Listpack, Skiplist int
	Members, MaxMembers       int64
	// Bytes is the sum of MEMORY USAGE (SAMPLES 0: exact for listpacks)
	// over every key under the prefix, registry and hashes included.
	Bytes int64
}

// Census counts the tasks and encodings of every zset under prefix (keys
// "{prefix}:*" except the segment registry), by SCAN on every master. A
// zset's tasks are its members with a finite score: a sealed zset of a
// shard family also holds one seal member (score +inf), which is not a
// task. MaxMembers counts every member, the seal too (what the listpack
// limit sees).
func Census(ctx context.Context, rdb redis.UniversalClient, prefix string) (ZsetCensus, error) {
	var c ZsetCensus
	registry := prefix + ":segments"
	all, err := scanKeys(ctx, rdb, prefix+":*")
	if err != nil {
		return c, fmt.Errorf("redis scan %s:*: %w", prefix, err)
	}
	keys := slices.DeleteFunc(all, func(k string) bool { return k == registry })
	if n, err := rdb.MemoryUsage(ctx, registry, 0).Result(); err == nil {
		c.Bytes += n
	}
	for lo := 0; lo < len(keys); lo += 1000 {
		chunk := keys[lo:min(lo+1000, len(keys))]
		pl := rdb.Pipeline()
		types := make([]*redis.StatusCmd, len(chunk))
		cards := make([]*redis.IntCmd, len(chunk))
		tasks := make([]*redis.IntCmd, len(chunk))
		encs := make([]*redis.StringCmd, len(chunk))
		mems := make([]*redis.IntCmd, len(chunk))
		for i, k := range chunk {
			mems[i] = pl.MemoryUsage(ctx, k, 0)
			types[i] = pl.Type(ctx, k)
			cards[i] = pl.ZCard(ctx, k)
			tasks[i] = pl.ZCount(ctx, k, "-inf", "(+inf")
			encs[i] = pl.ObjectEncoding(ctx, k)
		}
		// A key of another type (a redsync lock) fails ZCARD: judge per key.
		_, _ = pl.Exec(ctx)
		for i := range chunk {
			c.Bytes += mems[i].Val()
			if types[i].Val() != "zset" {
				continue
			}
			n, err := cards[i].Result()
			if err != nil {
				continue // deleted between SCAN and ZCARD
			}
			c.Zsets++
			c.Members += tasks[i].Val()
			c.MaxMembers = max(c.MaxMembers, n)
			switch encs[i].Val() {
			case "listpack", "ziplist":
				c.Listpack++
			case "skiplist":
				c.Skiplist++
			}
		}
	}
	return c, nil
}

// DeletePrefix unlinks every key under prefix and returns how many. One
// UNLINK per key, pipelined: a Redis Cluster refuses multi-key commands
// across slots.
func DeletePrefix(ctx context.Context, rdb redis.UniversalClient, prefix string) (int, error) {
	keys, err := scanKeys(ctx, rdb, prefix+":*")
	if err != nil {
		return 0, err
	}
	n := 0
	for chunk := range slices.Chunk(keys, 1000) {
		pl := rdb.Pipeline()
		for _, k := range chunk {
			pl.Unlink(ctx, k)
		}
		if _, err := pl.Exec(ctx); err != nil {
			return n, err
		}
		n += len(chunk)
	}
	return n, nil
}

// metricsClient is the HTTP client of the scrapes.
var metricsClient = &http.Client{Timeout: 5 * time.Second}

// RedisUsage is what Redis has spent so far: its CPU time (INFO cpu:
// used_cpu_user + used_cpu_sys) and the time spent in each command (INFO
// commandstats: usec, by command name), summed over the masters of a
// Redis Cluster. The Redis is delayd's, so the growth over a run is what
// the run cost it, plus what other clients of that Redis did meanwhile.
type RedisUsage struct {
	CPUSeconds  float64
	CommandUsec map[string]int64
}

// ReadRedisUsage reads RedisUsage from every master of rdb.
func ReadRedisUsage(ctx context.Context, rdb redis.UniversalClient) (RedisUsage, error) {
	var mu sync.Mutex
	total := RedisUsage{CommandUsec: map[string]int64{}}
	err := redisconn.ForEachMaster(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		var info strings.Builder
		for _, section := range []string{"cpu", "commandstats"} { // one a call: Redis 6 takes one section
			text, err := c.Info(ctx, section).Result()
			if err != nil {
				return fmt.Errorf("redis info %s: %w", section, err)
			}
			info.WriteString(text)
		}
		u, err := ParseRedisUsage(info.String())
		mu.Lock()
		defer mu.Unlock()
		total.CPUSeconds += u.CPUSeconds
		for k, v := range u.CommandUsec {
			total.CommandUsec[k] += v
		}
		return err
	})
	return total, err
}

// ParseRedisUsage reads the cpu and commandstats sections of INFO text.
func ParseRedisUsage(info string) (RedisUsage, error) {
	u := RedisUsage{CommandUsec: map[string]int64{}}
	var cpu int
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		name, value, ok := strings.Cut(line, ":")
		switch {
		case !ok:
		case name == "used_cpu_user" || name == "used_cpu_sys":
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return u, fmt.Errorf("redis info %s: %w", name, err)
			}
			u.CPUSeconds += v
			cpu++
		case strings.HasPrefix(name, "cmdstat_"):
			for field := range strings.SplitSeq(value, ",") {
				if v, ok := strings.CutPrefix(field, "usec="); ok {
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						return u, fmt.Errorf("redis info %s: %w", name, err)
					}
					u.CommandUsec[strings.TrimPrefix(name, "cmdstat_")] = n
				}
			}
		}
	}
	if cpu != 2 {
		return u, fmt.Errorf("redis info: no used_cpu_user and used_cpu_sys")
	}
	return u, nil
}

// Since returns what Redis spent from before to u: the CPU seconds and the
// commands that took time, most first.
func (u RedisUsage) Since(before RedisUsage) (float64, []CommandTime) {
	var cmds []CommandTime
	for name, usec := range u.CommandUsec {
		if d := usec - before.CommandUsec[name]; d > 0 {
			cmds = append(cmds, CommandTime{Name: name, Seconds: float64(d) / 1e6})
		}
	}
	slices.SortFunc(cmds, func(a, b CommandTime) int {
		return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), strings.Compare(a.Name, b.Name))
	})
	return u.CPUSeconds - before.CPUSeconds, cmds
}

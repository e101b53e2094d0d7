package load

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/internal/redisconn"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/zset"
)

// Defaults of Config.
const (
	DefaultBroker        = admin.DefaultBroker
	DefaultRedis         = zset.DefaultAddr
	DefaultDelayd        = daemon.DefaultHTTP
	DefaultPrefix        = zset.DefaultPrefix
	DefaultTasks         = 100_000
	DefaultSpan          = time.Minute
	DefaultMinDelay      = 5 * time.Second
	DefaultBurstAfter    = time.Minute
	DefaultPayload       = 100
	DefaultPartitions    = 8
	DefaultProducers     = 4
	DefaultAcceptTimeout = 10 * time.Minute
	DefaultGrace         = 2 * time.Minute
	DefaultSettle        = 3 * time.Second

	IDsSnowflake = "snowflake" // decimal snowflake ids, as the Go client makes
	IDsString    = "string"    // "lg-<run>-<seq>": delayq hashes them to 64 bits
)

// Config configures a run. Zero values mean the defaults.
type Config struct {
	Brokers []string // Kafka; default 127.0.0.1:9092
	Redis   string   // delayd's --redis: an address, Redis Cluster seeds or sentinels; default 127.0.0.1:6379
	Delayd  string   // host:port of delayd's --http; default 127.0.0.1:9464
	Prefix  string   // delayd's --prefix; default delayq
	// RedisConn is the rest of delayd's Redis settings (Sentinel master,
	// cluster, auth, TLS); its Addrs come from Redis.
	RedisConn redisconn.Config
	// Kafka is delayd's Kafka security (TLS, SASL); Run loads it into auth.
	Kafka kafkaauth.Config
	auth  *kafkaauth.Auth

	Tasks   int     // how many tasks; default 100,000
	Rate    float64 // tasks/s to produce; 0 = as fast as possible
	Payload int     // value bytes; default 100
	IDs     string  // IDsSnowflake (default) or IDsString

	// Delays are uniform over [MinDelay, MinDelay+Span) from each task's
	// submission (defaults 5s and 1m); with Burst every task is due in the
	// one second that starts BurstAfter (default 1m) after the run starts.
	MinDelay   time.Duration
	Span       time.Duration
	Burst      bool
	BurstAfter time.Duration

	Topic      string // business topic; default loadgen-<run>, created with Partitions
	Partitions int    // of the topics the run creates; default 8
	Producers  int    // concurrent WriteMessages callers; default 4

	NoDeliver bool // stop once everything is accepted (memory runs)
	Baseline  bool // run the kafka-go pass-through baseline first
	// BaselineBatch is the most messages the baseline copies per write and
	// commit; default DefaultBaselineBatch (1000).
	BaselineBatch int

	AcceptTimeout time.Duration // how long to wait for acceptance; default 10m
	Grace         time.Duration // how long after the last due time to wait for deliveries; default 2m
	Settle        time.Duration // extra wait for late duplicates; default 3s
	KeepTopics    bool          // do not delete the topics the run created
	Cleanup       bool          // unlink the Redis keys under Prefix at the end

	Run      string    // unique run name; default lg<unix seconds>
	Progress io.Writer // progress lines; nil: none
}

func (c *Config) setDefaults() {
	if len(c.Brokers) == 0 {
		c.Brokers = []string{DefaultBroker}
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Redis, DefaultRedis)
	def(&c.Delayd, DefaultDelayd)
	def(&c.Prefix, DefaultPrefix)
	def(&c.IDs, IDsSnowflake)
	def(&c.Run, fmt.Sprintf("lg%d", time.Now().Unix()))
	def(&c.Topic, "loadgen-"+c.Run)
	if c.Tasks == 0 {
		c.Tasks = DefaultTasks
	}
	if c.BaselineBatch == 0 {
		c.BaselineBatch = DefaultBaselineBatch
	}
	if c.Payload == 0 {
		c.Payload = DefaultPayload
	}
	if c.MinDelay == 0 {
		c.MinDelay = DefaultMinDelay
	}
	if c.Span == 0 {
		c.Span = DefaultSpan
	}
	if c.BurstAfter == 0 {
		c.BurstAfter = DefaultBurstAfter
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Producers == 0 {
		c.Producers = DefaultProducers
	}
	if c.AcceptTimeout == 0 {
		c.AcceptTimeout = DefaultAcceptTimeout
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.Settle == 0 {
		c.Settle = DefaultSettle
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("load: "+format, args...)) }
	if c.Tasks < 1 {
		bad("tasks %d < 1", c.Tasks)
	}
	if c.Rate < 0 {
		bad("rate %v < 0", c.Rate)
	}
	if c.BaselineBatch < 0 {
		bad("baseline-batch %d < 0", c.BaselineBatch)
	}
	if c.Payload < 0 {
		bad("payload %d < 0", c.Payload)
	}
	if c.IDs != IDsSnowflake && c.IDs != IDsString {
		bad("ids %q: want %s or %s", c.IDs, IDsSnowflake, IDsString)
	}
	if c.MinDelay < 0 || c.Span < 0 || c.BurstAfter < 0 {
		bad("negative delay")
	}
	if c.Partitions < 1 || c.Producers < 1 {
		bad("partitions and producers must be at least 1")
	}
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			bad("broker %q is not host:port", b)
		}
	}
	rc := c.RedisConn
	rc.Addrs = redisconn.SplitAddrs(c.Redis)
	if err := rc.Validate(); err != nil {
		bad("redis: %w", err)
	}
	if err := c.Kafka.Validate(); err != nil {
		bad("kafka: %w", err)
	}
	return errors.Join(errs...)
}

// delays describes the delay distribution for the report.
func (c *Config) delays() string {
	if c.Burst {
		return fmt.Sprintf("burst: all due in one second, %v after the start", c.BurstAfter)
	}
	return fmt.Sprintf("uniform over [%v, %v)", c.MinDelay, c.MinDelay+c.Span)
}

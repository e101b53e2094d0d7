package daemon

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/delayq/delayq/api"
	"github.com/delayq/delayq/ingest"
	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/internal/redisconn"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/kafka/topics"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/scanner"
	"github.com/delayq/delayq/zset"
)

// Roles delayd can run.
const (
	RoleIngest     = "ingest"
	RoleDispatcher = "dispatcher"
	RoleScanner    = "scanner"
	// RoleAPI serves the HTTP API (package api) on API; not a default role.
	RoleAPI = "api"
)

// Config configures delayd. Zero values mean the defaults of
// docs/ARCHITECTURE.md, "Interfaces".
type Config struct {
	Brokers  []string      // Kafka bootstrap addresses; default 127.0.0.1:9092
	Redis    string        // Redis address, or Redis Cluster seeds or sentinels, comma-separated; default 127.0.0.1:6379
	HBaseZK  string        // HBase ZooKeeper quorum; default 127.0.0.1:2181
	Table    string        // HBase table; default delayq_tasks
	Prefix   string        // Redis key prefix; default delayq
	Roles    []string      // default ingest, dispatcher, scanner
	Tick     time.Duration // dispatch tick; default 1m, at least 1s
	HTTP     string        // metrics and health address; default 127.0.0.1:9464
	MaxDelay time.Duration // longest accepted delay; default 720h

	Salts   int           // HBase salt buckets = pre-split regions; default 16
	Segment time.Duration // Redis segment length; default 1m
	Shards  int           // zsets per segment; default zset.DefaultShards (256)
	// ZsetFill is how many tasks a zset takes before it seals and its
	// shard's further tasks go to the next shard family; default
	// zset.DefaultFill (127). Keep it under Redis's
	// zset-max-listpack-entries.
	ZsetFill    int
	Partitions  int // partitions of the topics delayd creates; default 8
	ScanWorkers int // scanner goroutines per partition; default 8
	// IngestBatch is the most input messages of one partition stored and
	// committed together (ingest.Config.BatchSize); default 4000.
	IngestBatch int
	// ScanCoalesce rounds scanner wake-ups up to its multiples
	// (scanner.Config.Coalesce); default 50ms, negative: none.
	ScanCoalesce time.Duration
	AllowTopics  []string      // business topics allowed: names and prefixes ending in *; empty = any but internal ones and _*, connect-*
	Retention    time.Duration // how long a row outlives its exec_at; default 7 days
	SlowRate     float64       // delay-input-slow messages/s; default 1000
	GroupPrefix  string        // consumer group ids are <GroupPrefix>-ingest and -scanner; default delayq
	Pprof        bool          // serve net/http/pprof under /debug/pprof/ on HTTP
	// HBaseLegacyCells writes task rows in the multi-cell layout older
	// delayd read (hbase.Config.LegacyCells), during a rolling upgrade.
	HBaseLegacyCells bool
	// ReplicationFactor of the topics delayd creates; 0: the brokers'
	// default.replication.factor.
	ReplicationFactor int

	// How to reach Redis beyond the addresses (package redisconn): one
	// address in Redis is a single Redis, several are Redis Cluster seeds;
	// RedisMaster selects Sentinel (Redis then lists the sentinels) and
	// RedisCluster a cluster behind one seed address. RedisPassword is
	// never logged.
	RedisMaster   string
	RedisCluster  bool
	RedisUsername string
	RedisPassword string
	RedisTLS      bool
	// RedisTLSCA, RedisTLSCert and RedisTLSKey are PEM files: the CA that
	// verifies Redis, and the client certificate and key of mutual TLS.
	RedisTLSCA, RedisTLSCert, RedisTLSKey string

	// Kafka secures every Kafka connection (TLS, SASL; package
	// kafka/kafkaauth). Its password is never logged.
	Kafka kafkaauth.Config
	// HBaseZKRoot is HBase's znode parent in ZooKeeper
	// (zookeeper.znode.parent); default /hbase.
	HBaseZKRoot string

	// Console serves the web console under /ui/ on HTTP (package console);
	// off in a zero Config, on in delayd (--console). ConsoleWrite enables
	// its actions, which need ConsoleToken (DELAYQ_CONSOLE_TOKEN).
	Console      bool
	ConsoleWrite bool
	ConsoleToken string

	// API is the address of the HTTP API role (package api); default
	// 127.0.0.1:8080. APIToken (DELAYQ_API_TOKEN), when set, is the bearer
	// token every API request must carry.
	API      string
	APIToken string

	// Security defaults (see Validate and newConsole): an API on an
	// address other than loopback needs APIToken unless APIInsecure; a
	// console on such an HTTP address needs ConsoleToken, or it is off.
	// ConsoleHosts are the names, besides localhost and IP literals, the
	// console answers to in the Host header (the name an ingress passes
	// on), against DNS rebinding. APIRate is the API requests per second
	// one client IP may make (api.Config.Rate).
	APIInsecure  bool
	ConsoleHosts []string
	APIRate      float64
	// RepairInterval is how often delayd checks that the Redis index lost
	// nothing (package repair); default 5s, negative: never (a lost index
	// is then repaired only by delayctl repair). RepairLookback is how far
	// before a detected loss the repair starts; default 1m.
	RepairInterval time.Duration
	RepairLookback time.Duration
	// Serve are the limits of both HTTP servers (HTTP and API): timeouts
	// and the connection cap; zero means httpserve's defaults.
	Serve httpserve.Config
}

// Defaults of Config that no role package owns.
const (
	DefaultHTTP        = "127.0.0.1:9464"
	DefaultGroupPrefix = "delayq"
	DefaultTick        = time.Minute
)

// ErrConfig is wrapped by the errors of Config.Validate.
var ErrConfig = errors.New("daemon: invalid config")

// AllRoles are the roles delayd runs by default.
var AllRoles = []string{RoleIngest, RoleDispatcher, RoleScanner}

// KnownRoles are the roles --roles accepts.
var KnownRoles = append(slices.Clone(AllRoles), RoleAPI)

func (c *Config) setDefaults() {
	c.repairDefaults()
	if len(c.Brokers) == 0 {
		c.Brokers = []string{topics.DefaultBroker}
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Redis, zset.DefaultAddr)
	def(&c.HBaseZK, hbase.DefaultZK)
	def(&c.HBaseZKRoot, hbase.DefaultZKRoot)
	def(&c.Table, hbase.DefaultTable)
	def(&c.Prefix, zset.DefaultPrefix)
	def(&c.HTTP, DefaultHTTP)
	def(&c.API, api.DefaultAddr)
	def(&c.GroupPrefix, DefaultGroupPrefix)
	if len(c.Roles) == 0 {
		c.Roles = slices.Clone(AllRoles)
	}
	if c.Tick == 0 {
		c.Tick = DefaultTick
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = payload.DefaultMaxDelay
	}
	if c.Salts == 0 {
		c.Salts = hbase.DefaultSalts
	}
	if c.Segment == 0 {
		c.Segment = zset.DefaultSegment
	}
	if c.Shards == 0 {
		c.Shards = zset.DefaultShards
	}
	if c.ZsetFill == 0 {
		c.ZsetFill = zset.DefaultFill
	}
	if c.Partitions == 0 {
		c.Partitions = topics.DefaultPartitions
	}
	if c.ScanWorkers == 0 {
		c.ScanWorkers = scanner.DefaultWorkers
	}
	if c.IngestBatch == 0 {
		c.IngestBatch = ingest.DefaultBatchSize
	}
	if c.Retention == 0 {
		c.Retention = hbase.DefaultRetention
	}
	if c.SlowRate == 0 {
		c.SlowRate = ingest.DefaultSlowRate
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	for _, r := range c.Roles {
		if !slices.Contains(KnownRoles, r) {
			bad("roles: unknown role %q (want %s)", r, strings.Join(KnownRoles, ", "))
		}
	}
	if c.Tick < time.Second {
		bad("tick: %v is below the 1s minimum", c.Tick)
	}
	if c.MaxDelay <= 0 {
		bad("max-delay: %v must be positive", c.MaxDelay)
	}
	if c.Salts < 1 || c.Salts > 256 {
		bad("salts: %d is outside 1..256", c.Salts)
	}
	if c.Segment < time.Second || c.Segment%time.Second != 0 {
		bad("segment: %v must be whole seconds, at least 1s", c.Segment)
	}
	if c.Shards < 1 {
		bad("shards: %d must be at least 1", c.Shards)
	}
	if c.ZsetFill < 1 {
		bad("zset-fill: %d must be at least 1", c.ZsetFill)
	}
	if c.Partitions < 1 {
		bad("partitions: %d must be at least 1", c.Partitions)
	}
	if c.ReplicationFactor < 0 {
		bad("replication-factor: %d is negative", c.ReplicationFactor)
	}
	if c.ScanWorkers < 1 {
		bad("scan-workers: %d must be at least 1", c.ScanWorkers)
	}
	if c.IngestBatch < 1 {
		bad("ingest-batch: %d must be at least 1", c.IngestBatch)
	}
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			bad("brokers: %q is not host:port", b)
		}
	}
	if c.has(RoleAPI) && c.APIToken == "" && !c.APIInsecure && !httpserve.Loopback(c.API) {
		bad("api: %s is not a loopback address: set DELAYQ_API_TOKEN (at least %d bytes), or pass --api-insecure to serve the API open to whoever reaches it", c.API, api.MinTokenLen)
	}
	if err := c.Serve.Validate(); err != nil {
		bad("http: %w", err)
	}
	if err := topics.CheckPatterns(c.AllowTopics); err != nil {
		bad("allow-topics: %w", err)
	}
	rc := c.redisConn()
	if err := rc.Validate(); err != nil {
		bad("redis: %w", err)
	}
	if err := c.Kafka.Validate(); err != nil {
		bad("kafka: %w", err)
	}
	if !strings.HasPrefix(c.HBaseZKRoot, "/") {
		bad("hbase-zk-root: %q is not a znode path (/...)", c.HBaseZKRoot)
	}
	return errors.Join(errs...)
}

// redisConn is the Redis connection of c.
func (c *Config) redisConn() redisconn.Config {
	return redisconn.Config{
		Addrs: redisconn.SplitAddrs(c.Redis), MasterName: c.RedisMaster, Cluster: c.RedisCluster,
		Username: c.RedisUsername, Password: c.RedisPassword, TLS: c.RedisTLS,
		TLSCA: c.RedisTLSCA, TLSCert: c.RedisTLSCert, TLSKey: c.RedisTLSKey,
	}
}

func (c *Config) has(role string) bool { return slices.Contains(c.Roles, role) }

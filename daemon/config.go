package daemon

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/delayq/delayq/api"
	"github.com/delayq/delayq/console"
	"github.com/delayq/delayq/dispatcher"
	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/internal/redisconn"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/scanner"
	"github.com/delayq/delayq/topics"
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

// Config configures delayd. A zero field means its default, the value of
// DefaultConfig; for the booleans that is false, except Console, on in
// DefaultConfig (and delayd) but off in a zero Config.
type Config struct {
	Brokers  []string      // Kafka bootstrap addresses; default 127.0.0.1:9092
	Redis    string        // Redis address, or Redis Cluster seeds or sentinels, comma-separated; default 127.0.0.1:6379
	HBaseZK  string        // HBase ZooKeeper quorum; default 127.0.0.1:2181
	Table    string        // HBase table; default delayq_tasks
	Prefix   string        // Redis key prefix; default delayq
	Roles    []string      // default ingest, dispatcher, scanner
	Tick     time.Duration // dispatch tick; default 1m, whole seconds, at least 1s (dispatcher.Config)
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
	// ScanPrefetch is how long before their exec_at the scanner reads
	// tasks from HBase (scanner.Config.Prefetch); default 50ms, negative:
	// none.
	ScanPrefetch time.Duration
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
	// RedisMinReplicas is how many replicas of each Redis master must
	// hold the index writes of an input batch before its offsets are
	// committed (WAIT; ingest.Config.Replicas). 0, the default, commits
	// once the master acknowledged them.
	RedisMinReplicas int

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
	// Rules of the role packages are theirs: each is checked by its own
	// Validate, on the config delayd builds from c, under the flags it
	// comes from.
	owned := func(flags string, err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				bad("%s: %w", flags, e)
			}
		} else if err != nil {
			bad("%s: %w", flags, err)
		}
	}
	owned("tick", (&dispatcher.Config{Tick: c.Tick}).Validate())
	zc := c.zsetConfig()
	owned("segment, shards, zset-fill", zc.Validate())
	owned("salts, retention, max-delay", c.hbaseConfig().Validate())
	if c.Partitions < 1 {
		bad("partitions: %d must be at least 1", c.Partitions)
	}
	if c.RedisMinReplicas < 0 {
		bad("redis-min-replicas: %d is negative", c.RedisMinReplicas)
	}
	if c.ReplicationFactor < 0 {
		bad("replication-factor: %d is negative", c.ReplicationFactor)
	}
	if c.ScanWorkers < 1 {
		bad("scan-workers: %d must be at least 1", c.ScanWorkers)
	}
	if c.ScanPrefetch > scanner.MaxPrefetch {
		bad("scan-prefetch: %s is more than %s", c.ScanPrefetch, scanner.MaxPrefetch)
	}
	if c.IngestBatch < 1 {
		bad("ingest-batch: %d must be at least 1", c.IngestBatch)
	}
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			bad("brokers: %q is not host:port", b)
		}
	}
	if c.has(RoleAPI) && c.APIToken != "" && len(c.APIToken) < api.MinTokenLen {
		bad("DELAYQ_API_TOKEN: %d bytes, want at least %d (for example: export DELAYQ_API_TOKEN=$(openssl rand -hex 16))", len(c.APIToken), api.MinTokenLen)
	}
	if c.Console && c.ConsoleToken != "" && len(c.ConsoleToken) < console.MinTokenLen {
		bad("DELAYQ_CONSOLE_TOKEN: %d bytes, want at least %d (for example: export DELAYQ_CONSOLE_TOKEN=$(openssl rand -hex 16))", len(c.ConsoleToken), console.MinTokenLen)
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

// zsetConfig is the Redis index's config of c, without registry.
func (c *Config) zsetConfig() zset.Config {
	return zset.Config{Prefix: c.Prefix, Segment: c.Segment, Shards: c.Shards, Fill: c.ZsetFill}
}

// hbaseConfig is the HBase store's config of c, without logger and
// registry.
func (c *Config) hbaseConfig() hbase.Config {
	return hbase.Config{
		ZK: c.HBaseZK, ZKRoot: c.HBaseZKRoot, Table: c.Table, Salts: c.Salts, Retention: c.Retention, MaxDelay: c.MaxDelay,
		LegacyCells: c.HBaseLegacyCells,
	}
}

func (c *Config) has(role string) bool { return slices.Contains(c.Roles, role) }

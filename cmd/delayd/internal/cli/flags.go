package cli

import (
	"flag"
	"io"

	"github.com/delayq/delayq/cmd/internal/envflag"
	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/internal/connflags"
)

// Flags are the flags of the command itself, not of daemon.Config.
type Flags struct {
	Embedded            bool
	LogLevel, LogFormat string
	Version             bool
}

// NewFlagSet binds delayd's flags to cfg: each flag's default is the value
// cfg holds (daemon.DefaultConfig() in Main). Every flag belongs to one
// group of the help (groups); flag and variable names are the interface.
// The set prints nothing itself: Main reports its errors.
func NewFlagSet(cfg *daemon.Config) (*flag.FlagSet, *Flags) {
	fs := flag.NewFlagSet("delayd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	brokers, roles, allow := (*envflag.List)(&cfg.Brokers), (*envflag.List)(&cfg.Roles), (*envflag.List)(&cfg.AllowTopics)
	fs.Var(brokers, "brokers", "Kafka bootstrap addresses, comma-separated")
	fs.StringVar(&cfg.Redis, "redis", cfg.Redis, "Redis address; several comma-separated = Redis Cluster seeds, or the sentinels with --redis-master")
	fs.StringVar(&cfg.RedisMaster, "redis-master", cfg.RedisMaster, "Redis Sentinel master name: --redis then lists the sentinels")
	fs.BoolVar(&cfg.RedisCluster, "redis-cluster", cfg.RedisCluster, "Redis Cluster even with a single --redis seed")
	fs.StringVar(&cfg.RedisUsername, "redis-username", cfg.RedisUsername, "Redis ACL user")
	fs.StringVar(&cfg.RedisPassword, "redis-password", cfg.RedisPassword, "Redis password (prefer DELAYQ_REDIS_PASSWORD: ps shows flags; never logged)")
	fs.BoolVar(&cfg.RedisTLS, "redis-tls", cfg.RedisTLS, "connect to Redis with TLS (verified against the system roots)")
	connflags.RedisTLS(fs, &cfg.RedisTLSCA, &cfg.RedisTLSCert, &cfg.RedisTLSKey)
	fs.IntVar(&cfg.RedisMinReplicas, "redis-min-replicas", cfg.RedisMinReplicas, "replicas of each Redis master that must hold a batch's index writes before ingest commits it (WAIT; a replica down stalls ingest; 0: commit once the master has them)")
	connflags.Kafka(fs, &cfg.Kafka)
	fs.StringVar(&cfg.HBaseZK, "hbase-zk", cfg.HBaseZK, "HBase ZooKeeper quorum")
	fs.StringVar(&cfg.HBaseZKRoot, "hbase-zk-root", cfg.HBaseZKRoot, "HBase's znode parent in ZooKeeper (zookeeper.znode.parent)")
	fs.StringVar(&cfg.Table, "table", cfg.Table, "HBase table")
	fs.StringVar(&cfg.Prefix, "prefix", cfg.Prefix, "Redis key prefix")
	fs.Var(roles, "roles", "roles to run, comma-separated: ingest, dispatcher, scanner, api (the HTTP API; not a default)")
	fs.DurationVar(&cfg.Tick, "tick", cfg.Tick, "dispatch tick, down to 1s (1s with --embedded unless given)")
	fs.StringVar(&cfg.HTTP, "http", cfg.HTTP, "address of /metrics, /healthz and /readyz")
	fs.DurationVar(&cfg.MaxDelay, "max-delay", cfg.MaxDelay, "longest accepted delay")
	var cmd Flags
	fs.BoolVar(&cmd.Embedded, "embedded", false, "serve Kafka on --brokers and Redis on --redis in-process, payloads in memory")
	fs.Var(allow, "allow-topics", "business topics tasks may name, comma-separated: names and prefixes ending in * (default: any but internal topics and names starting with _ or connect-)")
	fs.IntVar(&cfg.Salts, "salts", cfg.Salts, "HBase salt buckets (pre-split regions) of a new table")
	fs.DurationVar(&cfg.Segment, "segment", cfg.Segment, "Redis segment length")
	fs.IntVar(&cfg.Shards, "shards", cfg.Shards, "Redis zsets per segment (shard family 0)")
	fs.IntVar(&cfg.ZsetFill, "zset-fill", cfg.ZsetFill, "tasks a zset takes before its shard's further tasks go to the next shard family; keep under Redis's zset-max-listpack-entries")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of the topics delayd creates")
	fs.IntVar(&cfg.ReplicationFactor, "replication-factor", cfg.ReplicationFactor, "replication factor of the topics delayd creates (0: the brokers' default.replication.factor)")
	fs.IntVar(&cfg.ScanWorkers, "scan-workers", cfg.ScanWorkers, "scanner goroutines per delay-scan partition")
	fs.DurationVar(&cfg.ScanCoalesce, "scan-coalesce", cfg.ScanCoalesce, "round scanner wake-ups up to multiples of this: fewer, larger steps, more lateness (negative: none)")
	fs.DurationVar(&cfg.ScanPrefetch, "scan-prefetch", cfg.ScanPrefetch, "read tasks from HBase this long before they fall due, so its answer time is not lateness; at most 1s, and no longer than --scan-coalesce takes effect (negative: none)")
	fs.IntVar(&cfg.IngestBatch, "ingest-batch", cfg.IngestBatch, "most input messages of one partition stored and committed together")
	fs.Float64Var(&cfg.SlowRate, "slow-rate", cfg.SlowRate, "delay-input-slow messages per second")
	fs.DurationVar(&cfg.Retention, "retention", cfg.Retention, "how long a stored task outlives its due time")
	fs.DurationVar(&cfg.RepairInterval, "repair-interval", cfg.RepairInterval, "how often to check that the Redis index lost nothing (a flushed, new or failed-over Redis) and repair it from HBase (negative: never)")
	fs.DurationVar(&cfg.RepairLookback, "repair-lookback", cfg.RepairLookback, "how far before a detected Redis loss the repair starts unless this delayd looked at the index before the loss: tasks due that long before it are delivered, again if they had been")
	fs.BoolVar(&cfg.Pprof, "pprof", cfg.Pprof, "serve /debug/pprof/ on the --http address (off loopback: needs DELAYQ_CONSOLE_TOKEN)")
	fs.BoolVar(&cfg.HBaseLegacyCells, "hbase-legacy-cells", cfg.HBaseLegacyCells, "write task rows in the multi-cell layout delayd read before one-cell rows: set it on every instance during a rolling upgrade from such a delayd, then restart without it")
	fs.BoolVar(&cfg.Console, "console", cfg.Console, "serve the web console under /ui/ on the --http address")
	fs.BoolVar(&cfg.ConsoleWrite, "console-write", cfg.ConsoleWrite, "enable the console's actions (cancel, replay); they need the token in DELAYQ_CONSOLE_TOKEN, which every console read then needs too (and which an --http address other than loopback needs for any console)")
	fs.StringVar(&cfg.API, "api", cfg.API, "address of the HTTP API (role api); requests need the bearer token in DELAYQ_API_TOKEN when it is set, which an address other than loopback requires")
	fs.BoolVar(&cfg.APIInsecure, "api-insecure", cfg.APIInsecure, "serve the API without DELAYQ_API_TOKEN on an address other than loopback: open to whoever reaches it")
	fs.Float64Var(&cfg.APIRate, "api-rate", cfg.APIRate, "API requests a second one client IP may make (negative: no limit)")
	fs.Var((*envflag.List)(&cfg.ConsoleHosts), "console-hosts", "names the console answers to in the Host header besides localhost and IP literals (an ingress's host name), comma-separated")
	fs.StringVar(&cmd.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&cmd.LogFormat, "log-format", "", "text or json (default: text when stderr is a terminal, else json)")
	fs.BoolVar(&cmd.Version, "version", false, "print the version, commit and Go version, and exit")
	return fs, &cmd
}

// given reports whether the flag name was set, on the command line or from
// its DELAYQ_* variable.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

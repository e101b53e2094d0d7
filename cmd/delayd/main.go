// Command delayd runs delayq's roles: ingest, dispatcher and scanner.
//
// Every flag also reads DELAYQ_<FLAG> (upper case, dashes as underscores);
// a flag beats the environment. See ../../README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/delayq/delayq/cmd/internal/envflag"
	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/scanner"
	"github.com/delayq/delayq/zset"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "delayd:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("delayd", flag.ContinueOnError)
	cfg := daemon.Config{
		Brokers: envflag.List{"127.0.0.1:9092"},
		Roles:   envflag.List{daemon.RoleIngest, daemon.RoleDispatcher, daemon.RoleScanner},
	}
	brokers, roles, allow := (*envflag.List)(&cfg.Brokers), (*envflag.List)(&cfg.Roles), (*envflag.List)(&cfg.AllowTopics)
	fs.Var(brokers, "brokers", "Kafka bootstrap addresses, comma-separated")
	fs.StringVar(&cfg.Redis, "redis", "127.0.0.1:6379", "Redis address; several comma-separated = Redis Cluster seeds, or the sentinels with --redis-master")
	fs.StringVar(&cfg.RedisMaster, "redis-master", "", "Redis Sentinel master name: --redis then lists the sentinels")
	fs.BoolVar(&cfg.RedisCluster, "redis-cluster", false, "Redis Cluster even with a single --redis seed")
	fs.StringVar(&cfg.RedisUsername, "redis-username", "", "Redis ACL user")
	fs.StringVar(&cfg.RedisPassword, "redis-password", "", "Redis password (prefer DELAYQ_REDIS_PASSWORD: ps shows flags; never logged)")
	fs.BoolVar(&cfg.RedisTLS, "redis-tls", false, "connect to Redis with TLS (verified against the system roots)")
	fs.StringVar(&cfg.HBaseZK, "hbase-zk", "127.0.0.1:2181", "HBase ZooKeeper quorum")
	fs.StringVar(&cfg.Table, "table", "delayq_tasks", "HBase table")
	fs.StringVar(&cfg.Prefix, "prefix", "delayq", "Redis key prefix")
	fs.Var(roles, "roles", "roles to run, comma-separated: ingest, dispatcher, scanner")
	fs.DurationVar(&cfg.Tick, "tick", 0, "dispatch tick, down to 1s (default 1m; 1s with --embedded)")
	fs.StringVar(&cfg.HTTP, "http", "127.0.0.1:9464", "address of /metrics, /healthz and /readyz")
	fs.DurationVar(&cfg.MaxDelay, "max-delay", 720*time.Hour, "longest accepted delay")
	embedded := fs.Bool("embedded", false, "serve Kafka on --brokers and Redis on --redis in-process, payloads in memory")
	fs.Var(allow, "allow-topics", "business topics tasks may name, comma-separated (default: any but internal topics)")
	fs.IntVar(&cfg.Salts, "salts", 16, "HBase salt buckets (pre-split regions) of a new table")
	fs.DurationVar(&cfg.Segment, "segment", zset.DefaultSegment, "Redis segment length")
	fs.IntVar(&cfg.Shards, "shards", zset.DefaultShards, "Redis zsets per segment")
	fs.IntVar(&cfg.Partitions, "partitions", 8, "partitions of the topics delayd creates")
	fs.IntVar(&cfg.ScanWorkers, "scan-workers", 8, "scanner goroutines per delay-scan partition")
	fs.DurationVar(&cfg.ScanCoalesce, "scan-coalesce", scanner.DefaultCoalesce, "round scanner wake-ups up to multiples of this: fewer, larger steps, more lateness (negative: none)")
	fs.Float64Var(&cfg.SlowRate, "slow-rate", 1000, "delay-input-slow messages per second")
	fs.DurationVar(&cfg.Retention, "retention", 7*24*time.Hour, "how long a stored task outlives its due time")
	fs.BoolVar(&cfg.Pprof, "pprof", false, "serve /debug/pprof/ on the --http address")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := envflag.Parse(fs, args, os.Getenv); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *embedded {
		if cfg.Tick == 0 {
			cfg.Tick = time.Second
		}
		return runEmbedded(ctx, cfg, logger)
	}
	d, err := daemon.New(cfg, daemon.Options{Logger: logger})
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

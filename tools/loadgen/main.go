// Command loadgen drives a running delayd and measures it: submit and
// delivery rates, lateness, lost, duplicate and early deliveries, Redis
// bytes per pending task and delayd CPU per 1,000 tasks, optionally against
// a plain kafka-go pass-through baseline measured in the same run. The
// summary goes to stdout, progress to stderr; see
// ../../docs/performance.md, "The load tool", and package tools/loadgen/internal/load.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/delayq/delayq/internal/connflags"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/tools/loadgen/internal/load"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	var cfg load.Config
	brokers := fs.String("brokers", load.DefaultBroker, "Kafka bootstrap addresses, comma-separated")
	fs.StringVar(&cfg.Redis, "redis", load.DefaultRedis, "delayd's --redis: Redis address, Redis Cluster seeds or sentinels, comma-separated")
	fs.StringVar(&cfg.RedisConn.MasterName, "redis-master", "", "delayd's --redis-master (Sentinel)")
	fs.BoolVar(&cfg.RedisConn.Cluster, "redis-cluster", false, "delayd's --redis-cluster")
	fs.StringVar(&cfg.RedisConn.Username, "redis-username", "", "delayd's --redis-username")
	fs.BoolVar(&cfg.RedisConn.TLS, "redis-tls", false, "delayd's --redis-tls")
	connflags.RedisTLS(fs, &cfg.RedisConn.TLSCA, &cfg.RedisConn.TLSCert, &cfg.RedisConn.TLSKey)
	cfg.RedisConn.Password = os.Getenv("DELAYQ_REDIS_PASSWORD") // as delayd reads it
	connflags.Kafka(fs, &cfg.Kafka)
	fs.StringVar(&cfg.Delayd, "delayd", load.DefaultDelayd, "delayd's --http address (/metrics, /readyz)")
	fs.StringVar(&cfg.Prefix, "prefix", load.DefaultPrefix, "delayd's --prefix (Redis census, --cleanup)")
	fs.IntVar(&cfg.Tasks, "tasks", load.DefaultTasks, "tasks to submit")
	fs.Float64Var(&cfg.Rate, "rate", 0, "tasks per second to submit (0: as fast as possible)")
	fs.IntVar(&cfg.Payload, "payload", load.DefaultPayload, "value size in bytes")
	fs.StringVar(&cfg.IDs, "ids", load.IDsSnowflake, "task ids: snowflake or string")
	fs.DurationVar(&cfg.MinDelay, "min-delay", load.DefaultMinDelay, "shortest delay")
	fs.DurationVar(&cfg.Span, "span", load.DefaultSpan, "delays uniform over [min-delay, min-delay+span)")
	fs.BoolVar(&cfg.Burst, "burst", false, "all tasks due in the same second, --burst-after from the start")
	fs.DurationVar(&cfg.BurstAfter, "burst-after", load.DefaultBurstAfter, "when the burst falls due")
	fs.StringVar(&cfg.Topic, "topic", "", "business topic (default loadgen-<run>)")
	fs.IntVar(&cfg.Partitions, "partitions", load.DefaultPartitions, "partitions of the topics loadgen creates")
	fs.IntVar(&cfg.Producers, "producers", load.DefaultProducers, "concurrent producer calls")
	fs.BoolVar(&cfg.NoDeliver, "no-deliver", false, "stop once every task is accepted (memory runs)")
	fs.BoolVar(&cfg.Baseline, "baseline", false, "measure a kafka-go pass-through first and report ratios")
	fs.IntVar(&cfg.BaselineBatch, "baseline-batch", load.DefaultBaselineBatch, "messages the baseline copies per write and commit")
	fs.DurationVar(&cfg.AcceptTimeout, "accept-timeout", load.DefaultAcceptTimeout, "how long to wait for acceptance")
	fs.DurationVar(&cfg.Grace, "grace", load.DefaultGrace, "how long after the last due time to wait for deliveries")
	fs.BoolVar(&cfg.KeepTopics, "keep-topics", false, "keep the topics loadgen created")
	fs.BoolVar(&cfg.Cleanup, "cleanup", false, "unlink the Redis keys under --prefix at the end")
	fs.StringVar(&cfg.Run, "run", "", "run name (default lg<unix seconds>)")
	jsonOut := fs.String("json", "", "write the JSON report here (- for stdout)")
	svgOut := fs.String("svg", "", "write the lateness plot (SVG) here")
	dropTable := fs.String("drop-table", "", "only drop this HBase table (after stopping its delayd) and exit")
	zk := fs.String("hbase-zk", hbase.DefaultZK, "HBase ZooKeeper quorum (--drop-table)")
	zkRoot := fs.String("hbase-zk-root", hbase.DefaultZKRoot, "HBase's znode parent in ZooKeeper (--drop-table)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	connflags.KafkaPassword(&cfg.Kafka, os.Getenv) // as delayd reads it
	cfg.Brokers = strings.Split(*brokers, ",")
	cfg.Progress = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dropTable != "" {
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return load.DropTable(dctx, *zk, *zkRoot, *dropTable)
	}

	rep, err := load.Run(ctx, cfg)
	if rep != nil {
		rep.WriteSummary(os.Stdout)
		if werr := writeOutputs(rep, *jsonOut, *svgOut); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

func writeOutputs(rep *load.Report, jsonOut, svgOut string) error {
	if jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if jsonOut == "-" {
			os.Stdout.Write(b)
		} else if err := os.WriteFile(jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	if svgOut != "" && rep.Delayq != nil {
		f, err := os.Create(svgOut)
		if err != nil {
			return err
		}
		title := fmt.Sprintf("delayq lateness, %s: %d tasks, %s", rep.Run, rep.Tasks, rep.Delays)
		if err := load.WriteSVG(f, title, rep.Delayq.Samples()); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return nil
}

package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/delayq/delayq/cmd/internal/envflag"
)

// group is a section of delayd --help: a title and its flags, in the
// order shown. Every flag of NewFlagSet is in exactly one group
// (TestEveryFlagInOneGroup).
type group struct {
	title string
	flags []string
}

var groups = []group{
	{"Mode and roles", []string{"embedded", "roles"}},
	{"Kafka", []string{"brokers", "partitions", "replication-factor"}},
	{"Redis", []string{"redis", "redis-master", "redis-cluster", "redis-min-replicas", "prefix", "segment", "shards", "zset-fill"}},
	{"HBase", []string{"hbase-zk", "hbase-zk-root", "table", "salts", "retention", "hbase-legacy-cells"}},
	{"Ingest (reads delay-input)", []string{"ingest-batch", "slow-rate", "max-delay", "allow-topics"}},
	{"Dispatcher", []string{"tick"}},
	{"Scanner (delivers)", []string{"scan-workers", "scan-coalesce", "scan-prefetch"}},
	{"Repair of a lost Redis index", []string{"repair-interval", "repair-lookback"}},
	{"HTTP, API and console", []string{"http", "api", "api-insecure", "api-rate", "console", "console-write", "console-hosts", "pprof"}},
	{"Security: TLS, SASL and passwords", []string{
		"kafka-tls", "kafka-tls-ca", "kafka-tls-cert", "kafka-tls-key", "kafka-tls-server-name",
		"kafka-sasl", "kafka-sasl-user", "kafka-sasl-password",
		"redis-tls", "redis-tls-ca", "redis-tls-cert", "redis-tls-key", "redis-username", "redis-password",
	}},
	{"Logs, traces and version", []string{"log-level", "log-format", "version"}},
}

// envOnly are the variables that are never flags (a flag shows in ps, or
// the variable is OpenTelemetry's standard one), each with the group it is
// shown in.
var envOnly = [][3]string{
	{"Security", "DELAYQ_API_TOKEN", "bearer token every API request must carry (at least 16 bytes); required for an --api address other than loopback unless --api-insecure"},
	{"Security", "DELAYQ_CONSOLE_TOKEN", "token of the console (at least 16 bytes); needed by --console-write, by a console on an --http address other than loopback, and by --pprof there"},
	{"Logs", "OTEL_EXPORTER_OTLP_ENDPOINT", "export OpenTelemetry traces over OTLP (HTTP/protobuf) to this endpoint (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); the other standard OTEL_* variables apply; unset: no traces, traceparent passes through untouched"},
}

const intro = `delayd runs delayq, the delay service for Kafka: producers write a message
to delay-input with the headers delay-topic and delay-after (or delay-at),
and delayd writes it to that topic when it falls due. It runs the roles
ingest, dispatcher and scanner (and api, the HTTP API, with --roles) against
Kafka, Redis and HBase, or all of it in one process with --embedded.

Usage:
  delayd [flags]

Examples:
  delayd --embedded                                  # no services needed; what make run starts
  delayd --embedded --brokers 127.0.0.1:19092 --redis 127.0.0.1:16379 --http 127.0.0.1:19464
  delayd --tick 1s                                   # against the local stack (make up)
  DELAYQ_BROKERS=kafka-1:9092,kafka-2:9092 DELAYQ_HBASE_ZK=zk-1:2181 delayd --roles ingest,scanner

Every flag also reads the variable named beside it: DELAYQ_<FLAG>, upper
case, dashes as underscores (--hbase-zk: DELAYQ_HBASE_ZK); a flag on the
command line beats the environment. Durations are like 1s, 500ms, 1m30s.
Exit codes: 0 done (--help, --version) or stopped by SIGINT or SIGTERM,
1 failure (a port taken, a service refusing), 2 bad usage (an unknown flag,
a bad value or configuration).
`

// usage writes delayd --help to w: the intro, then every flag by group,
// each with its variable and default and its description wrapped below.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, intro)
	all := groups
	if other := ungrouped(fs); len(other) > 0 { // never hide a flag (TestEveryFlagInOneGroup fails)
		all = append(all[:len(all):len(all)], group{"Other", other})
	}
	for _, g := range all {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.flags {
			if f := fs.Lookup(name); f != nil {
				writeFlag(w, f)
			}
		}
		for _, v := range envOnly {
			if strings.HasPrefix(g.title, v[0]) {
				fmt.Fprintf(w, "  %-32s environment only\n", v[1])
				wrap(w, v[2])
			}
		}
	}
}

// ungrouped returns the flags of fs that no group names.
func ungrouped(fs *flag.FlagSet) []string {
	in := map[string]bool{}
	for _, g := range groups {
		for _, name := range g.flags {
			in[name] = true
		}
	}
	var out []string
	fs.VisitAll(func(f *flag.Flag) {
		if !in[f.Name] {
			out = append(out, f.Name)
		}
	})
	return out
}

// writeFlag writes f's two or more lines: --name type, its variable and
// default, then its description.
func writeFlag(w io.Writer, f *flag.Flag) {
	typ, desc := flag.UnquoteUsage(f)
	if _, ok := f.Value.(*envflag.List); ok {
		typ = "list"
	}
	left := "--" + f.Name
	if typ != "" {
		left += " " + typ
	}
	line := fmt.Sprintf("  %-32s %s", left, envflag.Var(f.Name))
	if !zeroDefault(f.DefValue) {
		line += "  (default " + f.DefValue + ")"
	}
	fmt.Fprintln(w, line)
	wrap(w, desc)
}

// zeroDefault reports whether def is a default not worth showing.
func zeroDefault(def string) bool {
	switch def {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}

// wrap writes text indented by 6 in lines of at most 80 columns.
func wrap(w io.Writer, text string) {
	const indent, width = "      ", 80
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			fmt.Fprintln(w, line)
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}

package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/delayq/delayq/cmd/internal/envflag"
	"github.com/delayq/delayq/internal/connflags"
	"github.com/delayq/delayq/internal/version"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/zset"
)

// Exit codes of Main.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// IO is what a command sees of its process.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the DELAYQ_* variables (os.Getenv in production).
	Getenv func(string) string
	// Now is the clock for relative times and due times (time.Now).
	Now func() time.Time
}

func (s *IO) setDefaults() {
	if s.Stdin == nil {
		s.Stdin = os.Stdin
	}
	if s.Stdout == nil {
		s.Stdout = os.Stdout
	}
	if s.Stderr == nil {
		s.Stderr = os.Stderr
	}
	if s.Getenv == nil {
		s.Getenv = os.Getenv
	}
	if s.Now == nil {
		s.Now = time.Now
	}
}

// usageError marks bad flags, arguments and times: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// Main runs delayctl with args (without the program name) and returns the
// exit code. Errors are printed to io.Stderr as one line.
func Main(ctx context.Context, args []string, io IO) int {
	io.setDefaults()
	silenceRedis()
	root := newRoot(&io)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	name := "delayctl"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	fmt.Fprintf(io.Stderr, "%s: %s\n", name, oneLine(err.Error()))
	var ue usageError
	switch {
	case errors.As(err, &ue), strings.HasPrefix(err.Error(), "unknown command"):
		return ExitUsage
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return ExitInterrupted
	}
	return ExitFailure
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
}

// globals are the connection flags every command takes.
type globals struct {
	brokers []string
	redis   string
	rc      redisFlags // the other --redis-* flags
	zk      string
	zkRoot  string
	table   string
	prefix  string
	salts   int
	segment time.Duration
	shards  int
	timeout time.Duration
	kafka   kafkaauth.Config // --kafka-tls*, --kafka-sasl*
	auth    *kafkaauth.Auth  // loaded from kafka by validate; nil: plaintext
}

func newRoot(io *IO) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "delayctl",
		Short: "Operate delayq: topics and table, tasks, backlog, backfill",
		Long: `delayctl operates delayq, the delay service for Kafka: it creates the topics
and the HBase table, submits, cancels and inspects tasks, shows the pending
backlog and delivers stored tasks again (backfill).

Every flag also reads DELAYQ_<FLAG> (upper case, dashes as underscores, for
example DELAYQ_HBASE_ZK); a flag on the command line beats the environment.
Times are RFC 3339, a date, unix ms, now, or relative like -1h, +30m, -2d.
Exit codes: 0 ok, 1 failure, 2 bad usage, 130 interrupted.`,
		Example: `  delayctl init
  delayctl submit --topic orders --after 10m --key order-42 'hello'
  delayctl inspect --id reminder-42 --at 2030-01-02T15:04:05Z
  delayctl list --topic orders --from now --to +1h
  delayctl backlog --by day
  DELAYQ_BROKERS=kafka-1:9092 delayctl backfill --from -2h --to now --skip-pending
  source <(delayctl completion bash)`,
		Version:       version.Get().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), io.Getenv); err != nil {
				return err
			}
			return g.validate()
		},
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetIn(io.Stdin)
	root.SetOut(io.Stdout)
	root.SetErr(io.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	pf := root.PersistentFlags()
	pf.StringSliceVar(&g.brokers, "brokers", []string{admin.DefaultBroker}, "Kafka bootstrap addresses, comma-separated")
	pf.StringVar(&g.redis, "redis", zset.DefaultAddr, "Redis address; several comma-separated = Redis Cluster seeds, or the sentinels with --redis-master")
	g.rc.register(pf)
	secure := flag.NewFlagSet("", flag.ContinueOnError)
	connflags.Kafka(secure, &g.kafka)
	connflags.RedisTLS(secure, &g.rc.tlsCA, &g.rc.tlsCert, &g.rc.tlsKey)
	pf.AddGoFlagSet(secure)
	pf.StringVar(&g.zk, "hbase-zk", hbase.DefaultZK, "HBase ZooKeeper quorum")
	pf.StringVar(&g.zkRoot, "hbase-zk-root", hbase.DefaultZKRoot, "HBase's znode parent in ZooKeeper (zookeeper.znode.parent)")
	pf.StringVar(&g.table, "table", hbase.DefaultTable, "HBase table")
	pf.StringVar(&g.prefix, "prefix", zset.DefaultPrefix, "Redis key prefix")
	pf.IntVar(&g.salts, "salts", 16, "HBase salt buckets (pre-split regions); must match delayd's")
	pf.DurationVar(&g.segment, "segment", zset.DefaultSegment, "Redis segment length; must match delayd's")
	pf.IntVar(&g.shards, "shards", zset.DefaultShards, "Redis zsets per segment; must match delayd's")
	pf.DurationVar(&g.timeout, "timeout", 5*time.Second, "how long each service may take to answer the reachability check")

	root.AddCommand(
		newInit(io, g),
		newSubmit(io, g),
		newCancel(io, g),
		newReschedule(io, g),
		newReplace(io, g),
		newInspect(io, g),
		newList(io, g),
		newBacklog(io, g),
		newBackfill(io, g),
		newRepair(io, g),
		newReplay(io, g),
	)
	root.AddCommand(topicCommands(io, g)...)
	return root
}

func (g *globals) validate() error {
	var errs []string
	if len(g.brokers) == 0 {
		errs = append(errs, "--brokers: empty")
	}
	for _, b := range g.brokers {
		if !strings.Contains(b, ":") {
			errs = append(errs, fmt.Sprintf("--brokers: %q is not host:port", b))
		}
	}
	if g.redis == "" {
		errs = append(errs, "--redis: empty")
	} else if err := g.validateRedis(); err != nil {
		errs = append(errs, "--redis: "+oneLine(err.Error()))
	}
	if g.zk == "" {
		errs = append(errs, "--hbase-zk: empty")
	}
	if !strings.HasPrefix(g.zkRoot, "/") {
		errs = append(errs, fmt.Sprintf("--hbase-zk-root: %q is not a znode path (/...)", g.zkRoot))
	}
	var err error
	if g.auth, err = g.kafka.Load(); err != nil {
		errs = append(errs, "--kafka-*: "+oneLine(err.Error()))
	}
	if g.table == "" {
		errs = append(errs, "--table: empty")
	}
	if g.prefix == "" {
		errs = append(errs, "--prefix: empty")
	}
	// The layout rules are the stores' own, as in delayd.
	if err := (hbase.Config{Salts: g.salts}).Validate(); err != nil {
		errs = append(errs, "--salts: "+oneLine(err.Error()))
	}
	if err := (&zset.Config{Segment: g.segment, Shards: g.shards}).Validate(); err != nil {
		errs = append(errs, "--segment, --shards: "+oneLine(err.Error()))
	}
	if g.timeout <= 0 {
		errs = append(errs, fmt.Sprintf("--timeout: %v must be positive", g.timeout))
	}
	if len(errs) > 0 {
		return usageError{errors.New(strings.Join(errs, "; "))}
	}
	return nil
}

// applyEnv sets every flag not given on the command line from its
// DELAYQ_* variable.
func applyEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var errs []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" {
			return
		}
		name := envflag.Var(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Sprintf("%s=%q: %v", name, v, err))
		}
	})
	if len(errs) > 0 {
		return usageError{errors.New(strings.Join(errs, "; "))}
	}
	return nil
}

// require reports the flags of names that are neither given nor set from
// the environment.
func require(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if f := cmd.Flags().Lookup(n); f == nil || !f.Changed {
			missing = append(missing, "--"+n)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return usagef("%s is required", missing[0])
	}
	return usagef("%s are required", strings.Join(missing, ", "))
}

// noArgs rejects positional arguments as a usage error.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q (this command takes flags only)", args[0])
	}
	return nil
}

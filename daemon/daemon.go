package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/delayq/delayq/console"
	"github.com/delayq/delayq/ingest"
	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/internal/redisconn"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
	"github.com/delayq/delayq/repair"
	"github.com/delayq/delayq/topicctl"
	"github.com/delayq/delayq/topics"
)

// writerBatch is the BatchSize of the writer the roles share.
//
// kafka-go writes one batch at a time per partition: the next waits for
// the acknowledgment of the one before. So BatchSize caps what a partition
// takes per produce round trip, and on a busy broker that cap is the
// scanner's throughput. The price was garbage: kafka-go allocates room for
// BatchSize messages with every partition batch it opens, and a steady
// load opens many small ones (both measured at 100 and 1000:
// docs/performance.md, "the writer's batch size and merged Gets"). The
// roles share a producer.Split: calls of up to 64 messages go through a
// writer of batch size 64.
const writerBatch = 1000

// Store is the payload store the roles share: the HBase store in production,
// the in-memory one in embedded mode.
type Store interface {
	Put(ctx context.Context, tasks []payload.Task) error
	Get(ctx context.Context, refs []payload.Ref) ([]*payload.Task, error)
	payload.IDStore
	repair.WatchStore // the repair of a lost index scans rows and id rows
	find.Scanner      // GET /v1/tasks and the console's Tasks page list rows
}

// Options are what a caller can inject besides Config.
type Options struct {
	Logger *slog.Logger
	// Store replaces the HBase store (embedded mode, tests). When nil, Run
	// creates the table if missing and opens the HBase store on Config.HBaseZK.
	Store Store
	// Listener, when set, serves HTTP instead of listening on Config.HTTP.
	Listener net.Listener
	// AutoCreateTopics lets the roles' writer have the brokers create a
	// business topic that does not exist (embedded mode only: elsewhere a
	// producer must not create topics with delayq's Kafka identity).
	AutoCreateTopics bool
	// TracerProvider receives the spans of ingest and the deliveries
	// (internal/tracing; cmd/delayd builds it from OTEL_* variables); nil:
	// no spans, and traceparent passes through untouched.
	TracerProvider trace.TracerProvider

	// newIndex: Redis and Store start out empty together (Embedded), so
	// the loss watcher's first check records a new index instead of a
	// loss (repair.WatchConfig.NewIndex).
	newIndex bool
}

// Daemon is one delayd process.
type Daemon struct {
	cfg    Config
	opts   Options
	log    *slog.Logger
	reg    *prometheus.Registry
	ready  atomic.Bool
	health atomic.Pointer[health] // set once the backends are connected
	auth   *kafkaauth.Auth        // TLS and SASL of every Kafka connection; nil: plaintext
	// startErr is the last failure of a setup step, shown by /readyz
	// while delayd starts; nil once the step succeeded.
	startErr atomic.Pointer[string]

	console *console.Console // nil unless Config.Console
	apiLn   net.Listener     // the API's address, bound by Listen (api role)
	topics  *topicctl.Store  // the topic controls; set by Run
}

// New validates cfg and returns a Daemon ready to Run.
func New(cfg Config, opts Options) (*Daemon, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	auth, err := cfg.Kafka.Load()
	if err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, opts: opts, log: opts.Logger.With("component", "delayd"), reg: reg, auth: auth}
	if err := d.newConsole(); err != nil {
		return nil, err
	}
	return d, nil
}

// Ready reports whether setup finished and the roles run.
func (d *Daemon) Ready() bool { return d.ready.Load() }

// Listen binds the HTTP address (unless Options.Listener is set) and,
// with the api role, the API's, so that a taken port is refused before
// anything starts: one line that names the flag. Run calls it when the
// caller did not; a Daemon that was listening and is not Run must be
// Closed.
func (d *Daemon) Listen() error {
	if d.opts.Listener == nil {
		ln, err := listen("--http", d.cfg.HTTP)
		if err != nil {
			return err
		}
		d.opts.Listener = ln
	}
	if d.cfg.has(RoleAPI) && d.apiLn == nil {
		ln, err := listen("--api", d.cfg.API)
		if err != nil {
			d.Close()
			return err
		}
		d.apiLn = ln
	}
	return nil
}

// Close closes what Listen bound; Run closes it itself.
func (d *Daemon) Close() {
	for _, ln := range []net.Listener{d.opts.Listener, d.apiLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// listen binds addr, given with flag; a port taken is one line that names
// the flag and the address.
func listen(flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s %s: address already in use; pick another with %s", flag, addr, flag)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	return ln, nil
}

// Run serves HTTP at once (with /readyz 503), sets up topics, table and
// backends, runs the roles until ctx ends, then drains them and returns.
func (d *Daemon) Run(ctx context.Context) error {
	if err := d.Listen(); err != nil {
		return err
	}
	defer d.Close() // the API's listener if its role never started; closing twice is harmless
	ln := d.opts.Listener
	srv, err := httpserve.New(ln, d.handler(), d.cfg.Serve)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(gctx) })
	g.Go(func() error { return d.runRoles(gctx) })
	err = g.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil
	}
	return err
}

func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{Registry: d.reg}))
	if d.console != nil {
		d.console.Register(mux)
	}
	if h := d.pprof(); h != nil {
		mux.Handle("/debug/pprof/", h)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !d.ready.Load() {
			http.Error(w, "not ready: starting"+d.startFailure(), http.StatusServiceUnavailable)
			return
		}
		if down := d.health.Load().failing(); len(down) > 0 {
			// The roles stall and retry by themselves; this only says why.
			http.Error(w, "not ready: dependency down: "+strings.Join(down, "; "), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// pprof is the /debug/pprof/ handler, nil when off. Beyond loopback it
// needs the console token (profiles and goroutine dumps show what delayd
// is doing and with which tasks); without one it is off, with a WARN.
func (d *Daemon) pprof() http.Handler {
	if !d.cfg.Pprof {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	// No /debug/pprof/cmdline: it would show every flag, secrets given
	// as flags included (pprof.Index answers it 404).
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if httpserve.Loopback(d.cfg.HTTP) {
		return mux
	}
	if d.cfg.ConsoleToken == "" {
		d.log.Warn("pprof off: --http is not a loopback address and no console token is set",
			"http", d.cfg.HTTP, "enable", "set DELAYQ_CONSOLE_TOKEN; /debug/pprof/ then needs it as a bearer token")
		return nil
	}
	return httpserve.RequireBearer(mux, d.cfg.ConsoleToken, "delayq pprof")
}

// probes are the health checks of the backends the roles use: a real call
// to each (Kafka metadata, Redis PING, an HBase Get of a row that does not
// exist), never a log line or an open port.
func (d *Daemon) probes(rdb redis.UniversalClient, store Store) []probe {
	client := &kafka.Client{Addr: kafka.TCP(d.cfg.Brokers...), Transport: d.auth.Transport(), Timeout: probeTimeout}
	ps := []probe{
		{DepKafka, func(ctx context.Context) error {
			_, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topics.Scan}})
			return d.auth.Explain(err)
		}},
		{DepRedis, func(ctx context.Context) error { return redisconn.Explain(ctx, rdb, rdb.Ping(ctx).Err()) }},
	}
	dep := DepHBase
	if d.opts.Store != nil {
		dep = DepMemory
	}
	return append(ps, probe{dep, func(ctx context.Context) error {
		_, err := store.Get(ctx, []payload.Ref{{ID: 0, ExecAt: 0}})
		return err
	}})
}

// replicas is what ingest waits for with --redis-min-replicas: nil (no
// wait) at 0.
func replicas(rdb redis.UniversalClient, cfg Config) ingest.Replicas {
	if cfg.RedisMinReplicas == 0 {
		return nil
	}
	return redisconn.NewReplicas(rdb, cfg.Prefix, cfg.RedisMinReplicas, 0)
}

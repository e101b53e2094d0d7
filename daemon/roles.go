package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/delayq/delayq/dispatcher"
	"github.com/delayq/delayq/dispatcher/redlock"
	"github.com/delayq/delayq/ingest"
	"github.com/delayq/delayq/internal/redisconn"
	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/internal/tracing"
	"github.com/delayq/delayq/internal/version"
	"github.com/delayq/delayq/internal/watermark"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/repair"
	"github.com/delayq/delayq/scanner"
	"github.com/delayq/delayq/topicctl"
	"github.com/delayq/delayq/topics"
	"github.com/delayq/delayq/zset"
)

// The roles of the zset index each stage takes (see zset.Index): ingest
// writes entries and op flags, the dispatcher lists what is due and keeps
// the segments, the scanner reads, removes and writes the next occurrences
// of recurring tasks.
type (
	ingestIndex struct {
		*zset.Writer
		*zset.OpFlags
	}
	dispatchIndex struct {
		*zset.Reader
		*zset.Maintenance
	}
	scanIndex struct {
		*zset.Reader
		*zset.Writer
	}
)

// role is one long-running part of delayd: it runs until ctx ends.
type role func(ctx context.Context) error

// backends are what the roles share, connected and checked by connect.
type backends struct {
	startup   *retry.Stage
	store     Store
	storeDesc string // for the ready line
	rdb       redis.UniversalClient
	ix        *zset.Index
	w         *producer.Split
	decode    payload.DecodeConfig
	guard     *repair.Guard // the index repair's hold on deliveries; nil: no repair
	closers   []func()      // run last to first by close
}

// close closes what connect and the roles opened, last opened first.
func (b *backends) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// setupPolicy is how setup waits for its dependencies: as long as it
// takes, like the roles; permanent, when set, says which errors are fatal.
func setupPolicy(permanent error) retry.Policy {
	p := retry.Policy{CallTimeout: 30 * time.Second}
	if permanent != nil {
		p.Permanent = func(err error) bool { return errors.Is(err, permanent) }
	}
	return p
}

// runRoles connects the backends, builds the roles of Config.Roles, runs
// them with the health checks until ctx ends or one fails, and closes
// the backends.
func (d *Daemon) runRoles(ctx context.Context) error {
	b := &backends{}
	defer b.close()
	if err := d.connect(ctx, b); err != nil {
		return err
	}
	roles, err := d.roles(b)
	if err != nil {
		return err
	}
	h, err := newHealth(d.probes(b.rdb, b.store), d.log, d.reg)
	if err != nil {
		return err
	}
	d.health.Store(h)
	d.attachConsole(b.ix.Maintenance(), b.store, b.w, h)
	return d.serveRoles(ctx, roles, h, b.storeDesc)
}

// connect sets up topics, the table, Redis and its layout, and the
// writer the roles share, each step retried until it succeeds (shown by
// /readyz meanwhile) or fails for good.
func (d *Daemon) connect(ctx context.Context, b *backends) error {
	var err error
	if b.startup, err = retry.NewStage("startup", d.log, d.reg); err != nil {
		return err
	}
	if err := d.ensureTopics(ctx, b); err != nil {
		return err
	}
	if err := d.openStore(ctx, b); err != nil {
		return err
	}
	if err := d.openIndex(ctx, b); err != nil {
		return err
	}
	cfg := d.cfg
	b.w = producer.NewSplit(producer.Config{Brokers: cfg.Brokers, Auth: d.auth, BatchSize: writerBatch, ClientID: version.Get().ClientID("delayd"), AutoCreateTopics: d.opts.AutoCreateTopics}, 0)
	b.closers = append(b.closers, func() { _ = b.w.Close() })
	b.decode = payload.DecodeConfig{MaxDelay: cfg.MaxDelay, AllowTopic: topics.Allow(cfg.AllowTopics)}
	return nil
}

// ensureTopics creates delayq's internal topics that are missing.
func (d *Daemon) ensureTopics(ctx context.Context, b *backends) error {
	cfg := d.cfg
	return b.startup.Do(ctx, "create topics", setupPolicy(nil), d.noteStart("create topics", func(ctx context.Context) error {
		specs := admin.Defaults(cfg.Partitions)
		for i := range specs {
			specs[i].ReplicationFactor = cfg.ReplicationFactor
		}
		return admin.Ensure(ctx, cfg.Brokers, d.auth, specs)
	}))
}

// openStore takes Options.Store, or creates the HBase table when missing
// and opens the HBase store on it.
func (d *Daemon) openStore(ctx context.Context, b *backends) error {
	if d.opts.Store != nil {
		b.store, b.storeDesc = d.opts.Store, "in-memory (nothing kept across restarts)"
		return nil
	}
	cfg := d.cfg
	b.storeDesc = "hbase " + cfg.Table + " via " + cfg.HBaseZK
	// A table written with another salt count can never be read right:
	// that is fatal, not an outage to wait out.
	if err := b.startup.Do(ctx, "create table", setupPolicy(hbase.ErrSaltsMismatch), d.noteStart("create table", func(ctx context.Context) error {
		return hbase.CreateTable(ctx, cfg.HBaseZK, cfg.HBaseZKRoot, cfg.Table, cfg.Salts)
	})); err != nil {
		return err
	}
	hcfg := cfg.hbaseConfig()
	hcfg.Logger, hcfg.Registerer = d.opts.Logger, d.reg
	hb, err := hbase.New(hcfg)
	if err != nil {
		return fmt.Errorf("hbase store: %w", err)
	}
	b.closers = append(b.closers, hb.Close)
	b.store = hb
	return nil
}

// openIndex connects Redis, opens the zset index and the topic controls
// on it, and checks the index's layout.
func (d *Daemon) openIndex(ctx context.Context, b *backends) error {
	cfg := d.cfg
	rdb, err := redisconn.New(cfg.redisConn())
	if err != nil {
		return err
	}
	b.closers = append(b.closers, func() { _ = rdb.Close() })
	b.rdb = rdb
	if err := b.startup.Do(ctx, "ping redis", setupPolicy(redisconn.ErrClusterNode), d.noteStart("ping redis", func(ctx context.Context) error {
		return redisconn.Ping(ctx, rdb)
	})); err != nil {
		return err
	}
	zcfg := cfg.zsetConfig()
	zcfg.Registerer = d.reg
	if b.ix, err = zset.New(rdb, zcfg); err != nil {
		return err
	}
	if d.topics, err = topicctl.New(rdb, topicctl.Config{Prefix: cfg.Prefix}); err != nil {
		return err
	}
	// Keys written with another segment, shard count or fill are misread:
	// like the table's salts, a mismatch is fatal, not an outage.
	return b.startup.Do(ctx, "check redis layout", setupPolicy(zset.ErrLayoutMismatch), d.noteStart("check redis layout", b.ix.CheckLayout))
}

// roles builds the repair watcher (unless off) and the roles of
// Config.Roles, in the order they start.
func (d *Daemon) roles(b *backends) ([]role, error) {
	inIx, watch, guard, err := d.newRepair(b.rdb, b.store, b.ix)
	if err != nil {
		return nil, err
	}
	b.guard = guard
	var roles []role
	if watch != nil {
		roles = append(roles, watch)
	}
	for _, r := range []struct {
		name string
		make func(*backends, ingest.Index) ([]role, error)
	}{
		{RoleIngest, d.ingestRole},
		{RoleDispatcher, d.dispatcherRole},
		{RoleScanner, d.scannerRole},
		{RoleAPI, d.apiRole},
	} {
		if !d.cfg.has(r.name) {
			continue
		}
		rs, err := r.make(b, inIx)
		if err != nil {
			return nil, err
		}
		roles = append(roles, rs...)
	}
	return roles, nil
}

// ingestRole reads delay-input and delay-input-slow into the store and
// the index (inIx: guarded by the repair watcher when it runs).
func (d *Daemon) ingestRole(b *backends, inIx ingest.Index) ([]role, error) {
	cfg := d.cfg
	in, err := ingest.New(ingest.Config{
		Brokers: cfg.Brokers, Auth: d.auth, GroupID: cfg.GroupPrefix + "-ingest", SlowRate: cfg.SlowRate, BatchSize: cfg.IngestBatch,
		Decode: b.decode,
		Marks:  b.ix.Watermarks(), Retention: cfg.Retention, Logger: d.opts.Logger, Registerer: d.reg,
		Replicas: replicas(b.rdb, cfg), Tracer: tracing.New(d.opts.TracerProvider),
	}, b.store, inIx, b.w)
	if err != nil {
		return nil, err
	}
	return []role{in.Run}, nil
}

// dispatcherRole emits the scan tasks of the due segments, under a lock.
func (d *Daemon) dispatcherRole(b *backends, _ ingest.Index) ([]role, error) {
	dp, err := dispatcher.New(dispatcher.Config{
		Tick: d.cfg.Tick, LockPrefix: d.cfg.Prefix, Logger: d.opts.Logger, Registerer: d.reg,
	}, dispatchIndex{b.ix.Reader(), b.ix.Maintenance()}, redlock.New(b.rdb), b.w)
	if err != nil {
		return nil, err
	}
	return []role{dp.Run}, nil
}

// scannerRole delivers due tasks, held back by the ingest watermarks it
// follows (a role of its own) and, while the index may have lost data, by
// the repair's guard (a role of its own too).
func (d *Daemon) scannerRole(b *backends, _ ingest.Index) ([]role, error) {
	cfg := d.cfg
	hold, err := watermark.NewFollower(watermark.Config{Topic: topics.Input}, b.ix.Watermarks(), d.opts.Logger, d.reg)
	if err != nil {
		return nil, err
	}
	sc, err := scanner.New(scanner.Config{
		Brokers: cfg.Brokers, Auth: d.auth, GroupID: cfg.GroupPrefix + "-scanner", Workers: cfg.ScanWorkers, Coalesce: cfg.ScanCoalesce,
		Prefetch: cfg.ScanPrefetch,
		MaxDelay: cfg.MaxDelay, Hold: scanHold(hold, b.guard), Controls: d.topics, Logger: d.opts.Logger, Registerer: d.reg,
		Tracer: tracing.New(d.opts.TracerProvider),
	}, scanIndex{b.ix.Reader(), b.ix.Writer()}, b.store, b.w)
	if err != nil {
		return nil, err
	}
	roles := []role{sc.Run, func(ctx context.Context) error { hold.Run(ctx); return nil }}
	if b.guard != nil {
		roles = append(roles, func(ctx context.Context) error { b.guard.Run(ctx); return nil })
	}
	return roles, nil
}

// apiRole serves the HTTP API (api.go); its client closes with the
// backends.
func (d *Daemon) apiRole(b *backends, _ ingest.Index) ([]role, error) {
	run, closeClient, err := d.newAPI(b.store, b.decode)
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() { _ = closeClient() })
	return []role{run}, nil
}

// serveRoles runs the roles and the health checks, ready meanwhile, until
// ctx ends or a role fails; it returns after every one has ended.
func (d *Daemon) serveRoles(ctx context.Context, roles []role, h *health, storeDesc string) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, run := range roles {
		g.Go(func() error { return run(gctx) })
	}
	hctx, stopHealth := context.WithCancel(gctx)
	healthDone := make(chan struct{})
	go func() {
		defer close(healthDone)
		h.run(hctx)
	}()
	defer func() {
		stopHealth()
		<-healthDone
	}()
	d.ready.Store(true)
	cfg := d.cfg
	d.log.Info("delayd ready", "roles", cfg.Roles, "brokers", cfg.Brokers, "kafka", cfg.Kafka, "redis", cfg.redisConn(),
		"store", storeDesc, "tick", cfg.Tick.String(), "http", cfg.HTTP)
	err := g.Wait()
	d.ready.Store(false)
	return err
}

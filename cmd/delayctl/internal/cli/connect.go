package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/delayq/delayq/internal/redisconn"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/zset"
)

// checkKafka connects to the brokers, one after the other, with a Kafka
// handshake; the first one that answers is enough.
func (g *globals) checkKafka(ctx context.Context) error {
	var errs []string
	for _, b := range g.brokers {
		cctx, cancel := context.WithTimeout(ctx, g.timeout)
		conn, err := g.auth.Dialer(g.timeout).DialContext(cctx, "tcp", b)
		if err == nil {
			_, err = conn.ApiVersions()
			conn.Close()
		}
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A refused login or TLS handshake is no outage: say only that.
		if err := g.auth.Explain(err); errors.As(err, new(*kafkaauth.Error)) {
			return fmt.Errorf("%w (at %s)", err, b)
		}
		errs = append(errs, fmt.Sprintf("%s: %v", b, err))
	}
	return fmt.Errorf("kafka unreachable at %s (--brokers): %s",
		strings.Join(g.brokers, ","), strings.Join(errs, "; "))
}

// checkZK dials the ZooKeeper quorum of HBase: gohbase waits forever on an
// unreachable quorum, so every HBase call is preceded by this check.
func (g *globals) checkZK(ctx context.Context) error {
	var errs []string
	for _, addr := range strings.Split(g.zk, ",") {
		addr = strings.TrimSpace(addr)
		if !strings.Contains(addr, ":") {
			addr += ":2181"
		}
		cctx, cancel := context.WithTimeout(ctx, g.timeout)
		conn, err := (&net.Dialer{}).DialContext(cctx, "tcp", addr)
		cancel()
		if err == nil {
			conn.Close()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		errs = append(errs, err.Error())
	}
	return fmt.Errorf("hbase zookeeper unreachable at %s (--hbase-zk): %s", g.zk, strings.Join(errs, "; "))
}

// quietRedis drops go-redis's own log lines (dial failures): the command
// reports the failure as its error.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// silenceRedis installs quietRedis as go-redis's process-wide logger.
func silenceRedis() { quietOnce.Do(func() { redis.SetLogger(quietRedis{}) }) }

// redisFlags are the connection flags of Redis besides --redis.
type redisFlags struct {
	master, username, password string
	cluster, tls               bool
	tlsCA, tlsCert, tlsKey     string // connflags.RedisTLS
}

func (f *redisFlags) register(pf *pflag.FlagSet) {
	pf.StringVar(&f.master, "redis-master", "", "Redis Sentinel master name: --redis then lists the sentinels")
	pf.BoolVar(&f.cluster, "redis-cluster", false, "Redis Cluster even with a single --redis seed")
	pf.StringVar(&f.username, "redis-username", "", "Redis ACL user")
	pf.StringVar(&f.password, "redis-password", "", "Redis password (prefer DELAYQ_REDIS_PASSWORD: ps shows flags)")
	pf.BoolVar(&f.tls, "redis-tls", false, "connect to Redis with TLS")
}

// redisConn is the Redis connection the flags describe.
func (g *globals) redisConn() redisconn.Config {
	return redisconn.Config{
		Addrs: redisconn.SplitAddrs(g.redis), MasterName: g.rc.master, Cluster: g.rc.cluster,
		Username: g.rc.username, Password: g.rc.password, TLS: g.rc.tls,
		TLSCA: g.rc.tlsCA, TLSCert: g.rc.tlsCert, TLSKey: g.rc.tlsKey,
		DialTimeout: g.timeout, DialerRetries: 1, MaxRetries: 1,
	}
}

// validateRedis checks the Redis flags.
func (g *globals) validateRedis() error {
	rc := g.redisConn()
	return rc.Validate()
}

// openRedis returns a client on --redis (a single Redis, a Redis Cluster
// or Sentinel) once it answers PING.
func (g *globals) openRedis(ctx context.Context) (redis.UniversalClient, error) {
	rdb, err := redisconn.New(g.redisConn())
	if err != nil {
		return nil, usageError{fmt.Errorf("--redis: %w", err)}
	}
	cctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	if err := redisconn.Ping(cctx, rdb); err != nil {
		rdb.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, redisconn.ErrClusterNode) {
			return nil, fmt.Errorf("redis at %s (--redis): %w", g.redis, err)
		}
		return nil, fmt.Errorf("redis unreachable at %s (--redis): %w", g.redis, err)
	}
	return rdb, nil
}

// openIndex returns the maintenance role of the zset index (Backlog,
// Pending, Key: what delayctl reads) on a reachable Redis; close the client
// when done.
func (g *globals) openIndex(ctx context.Context) (*zset.Maintenance, redis.UniversalClient, error) {
	ix, rdb, err := g.openZset(ctx)
	if err != nil {
		return nil, nil, err
	}
	return ix.Maintenance(), rdb, nil
}

// openZset is openIndex with every role of the index.
func (g *globals) openZset(ctx context.Context) (*zset.Index, redis.UniversalClient, error) {
	rdb, err := g.openRedis(ctx)
	if err != nil {
		return nil, nil, err
	}
	ix, err := zset.New(rdb, zset.Config{Prefix: g.prefix, Segment: g.segment, Shards: g.shards})
	if err == nil {
		err = ix.FollowLayout(ctx)
	}
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return ix, rdb, nil
}

// openStore returns the HBase store once its ZooKeeper answers and a read
// from the table succeeds within --timeout (the first read also finds the
// regions); close it when done.
func (g *globals) openStore(ctx context.Context) (*hbase.Store, error) {
	if err := g.checkZK(ctx); err != nil {
		return nil, err
	}
	store, err := hbase.New(hbase.Config{ZK: g.zk, ZKRoot: g.zkRoot, Table: g.table, Salts: g.salts})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*g.timeout)
	defer cancel()
	if _, err := store.Get(cctx, []payload.Ref{{}}); err != nil {
		store.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, g.hbaseError(err)
	}
	return store, nil
}

// hbaseError names the table and the quorum in an HBase failure, and says
// so plainly when the table does not exist.
func (g *globals) hbaseError(err error) error {
	if strings.Contains(err.Error(), "TableNotFound") || strings.Contains(err.Error(), "table not found") {
		return fmt.Errorf("hbase table %s not found (--table; create it with delayctl init)", g.table)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("hbase at %s (--hbase-zk) did not answer a read from table %s within %v: %w",
			g.zk, g.table, 2*g.timeout, err)
	}
	return fmt.Errorf("hbase at %s (--hbase-zk), table %s: %w", g.zk, g.table, err)
}

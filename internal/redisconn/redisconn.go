package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/tlsfiles"
)

// DefaultAddr is the Redis address used when Config.Addrs is empty.
const DefaultAddr = "127.0.0.1:6379"

// Modes of a Config, as Config.Mode names them.
const (
	ModeSingle   = "single"
	ModeCluster  = "cluster"
	ModeSentinel = "sentinel"
)

var (
	// ErrConfig is wrapped by every Config.Validate error.
	ErrConfig = errors.New("redisconn: invalid config")
	// ErrClusterNode is returned by Ping when a single-Redis client talks
	// to a Redis Cluster node.
	ErrClusterNode = errors.New("redisconn: the address is a Redis Cluster node")
)

// Config says how to reach Redis. The zero value is a single Redis on
// DefaultAddr, no auth, no TLS.
type Config struct {
	// Addrs are host:port addresses: the Redis (one), the Redis Cluster
	// seeds (several, or one with Cluster), or the sentinels (with
	// MasterName). Default [DefaultAddr].
	Addrs []string
	// MasterName selects Redis Sentinel: the name of the monitored master.
	MasterName string
	// Cluster selects Redis Cluster even with a single seed address (a
	// cluster's configuration endpoint). Several addresses without
	// MasterName always mean a cluster.
	Cluster bool
	// Username and Password authenticate to Redis (AUTH; Username for an
	// ACL user). With Sentinel they are the master's, and the sentinels are
	// asked without auth.
	Username string
	Password string
	// TLS connects with TLS, verifying the server against the system roots
	// with the host of each address as server name. TLSCA (PEM) replaces
	// the system roots; TLSCert and TLSKey (PEM, both or neither) are the
	// client certificate of mutual TLS; any of them implies TLS. TLSConfig,
	// when set, replaces all that configuration (and implies TLS).
	TLS       bool
	TLSCA     string
	TLSCert   string
	TLSKey    string
	TLSConfig *tls.Config
	// DialTimeout bounds one connection attempt; 0 means go-redis's 5s.
	DialTimeout time.Duration
	// DialerRetries is how many times a failed dial is tried again; 0 means
	// go-redis's default (5).
	DialerRetries int
	// MaxRetries is how many times go-redis repeats a failed command by
	// itself; 0 means its default (3), -1 none. delayq's stages retry
	// around that with their own backoff.
	MaxRetries int
}

// SplitAddrs splits a comma-separated address list (a --redis value),
// trimming blanks and dropping empty parts.
func SplitAddrs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c *Config) setDefaults() {
	if len(c.Addrs) == 0 {
		c.Addrs = []string{DefaultAddr}
	}
}

// Validate reports every problem of c at once, each wrapping ErrConfig.
// New calls it after filling in the defaults; an empty Addrs is an error
// here.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if len(c.Addrs) == 0 {
		bad("no address")
	}
	seen := make(map[string]bool, len(c.Addrs))
	for _, a := range c.Addrs {
		host, port, err := net.SplitHostPort(a)
		switch {
		case err != nil || host == "" || port == "":
			bad("address %q is not host:port", a)
		case seen[a]:
			bad("address %q given twice", a)
		}
		seen[a] = true
	}
	if c.MasterName != "" && c.Cluster {
		bad("a Sentinel master name (%q) and cluster mode exclude each other", c.MasterName)
	}
	if c.Username != "" && c.Password == "" {
		bad("username %q without a password", c.Username)
	}
	if err := c.tlsFiles().Validate(); err != nil {
		bad("tls: %w", err)
	}
	if c.DialTimeout < 0 {
		bad("dial timeout %v is negative", c.DialTimeout)
	}
	if c.DialerRetries < 0 {
		bad("dialer retries %d is negative", c.DialerRetries)
	}
	if c.MaxRetries < -1 {
		bad("max retries %d: want -1 (none), 0 (default) or more", c.MaxRetries)
	}
	return errors.Join(errs...)
}

// Mode is ModeSentinel with a master name, ModeCluster with several
// addresses or Cluster set, else ModeSingle.
func (c Config) Mode() string {
	switch {
	case c.MasterName != "":
		return ModeSentinel
	case c.Cluster || len(c.Addrs) > 1:
		return ModeCluster
	}
	return ModeSingle
}

// String describes c for people, for example
// "cluster 10.0.0.1:6379,10.0.0.2:6379 user=delayq password=set tls".
// It never shows the password.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString(c.Mode())
	if c.MasterName != "" {
		fmt.Fprintf(&b, " master=%s via", c.MasterName)
	}
	b.WriteByte(' ')
	b.WriteString(strings.Join(c.Addrs, ","))
	if c.Username != "" {
		b.WriteString(" user=" + c.Username)
	}
	if c.Password != "" {
		b.WriteString(" password=set")
	}
	if c.tls() {
		b.WriteString(" tls")
	}
	if c.TLSCA != "" {
		b.WriteString(" tls_ca=" + c.TLSCA)
	}
	if c.TLSCert != "" {
		b.WriteString(" tls_cert=" + c.TLSCert)
	}
	return b.String()
}

// LogValue logs c as a group (mode, addrs, master, username, password_set,
// tls); never the password.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("mode", c.Mode()),
		slog.String("addrs", strings.Join(c.Addrs, ",")),
	}
	if c.MasterName != "" {
		attrs = append(attrs, slog.String("master", c.MasterName))
	}
	if c.Username != "" {
		attrs = append(attrs, slog.String("username", c.Username))
	}
	attrs = append(attrs, slog.Bool("password_set", c.Password != ""), slog.Bool("tls", c.tls()))
	if c.TLSCA != "" {
		attrs = append(attrs, slog.String("tls_ca", c.TLSCA))
	}
	if c.TLSCert != "" {
		attrs = append(attrs, slog.String("tls_cert", c.TLSCert))
	}
	return slog.GroupValue(attrs...)
}

// GoString keeps %#v from printing the password either.
func (c Config) GoString() string { return "redisconn.Config{" + c.String() + "}" }

func (c Config) tls() bool {
	return c.TLS || c.TLSConfig != nil || c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != ""
}

func (c Config) tlsFiles() tlsfiles.Files {
	return tlsfiles.Files{CA: c.TLSCA, Cert: c.TLSCert, Key: c.TLSKey}
}

// Options returns the go-redis options of c, defaults filled in, after
// reading its TLS files; c must be valid.
func (c Config) Options() (*redis.UniversalOptions, error) {
	c.setDefaults()
	o := &redis.UniversalOptions{
		Addrs:         c.Addrs,
		MasterName:    c.MasterName,
		IsClusterMode: c.Cluster,
		Username:      c.Username,
		Password:      c.Password,
		DialTimeout:   c.DialTimeout,
		DialerRetries: c.DialerRetries,
		MaxRetries:    c.MaxRetries,
	}
	switch {
	case c.TLSConfig != nil:
		o.TLSConfig = c.TLSConfig.Clone()
	case c.tls():
		// No ServerName: crypto/tls takes it from each address dialled
		// (cluster nodes and failed-over masters included).
		t, err := c.tlsFiles().Load("")
		if err != nil {
			return nil, fmt.Errorf("%w: tls: %w", ErrConfig, err)
		}
		o.TLSConfig = t
	}
	return o, nil
}

// New returns a client for c: a redis.Client, redis.ClusterClient or
// failover redis.Client (see the package doc). It connects lazily; check it
// with Ping.
func New(c Config) (redis.UniversalClient, error) {
	c.setDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	o, err := c.Options()
	if err != nil {
		return nil, err
	}
	return redis.NewUniversalClient(o), nil
}

// Ping checks that rdb answers; a failure says what a TLS server that
// ended the session gave as its cause (Explain). A single-Redis client
// that reaches a Redis Cluster node gets ErrClusterNode, which says to
// list several seeds or select cluster mode.
func Ping(ctx context.Context, rdb redis.UniversalClient) error {
	if err := rdb.Ping(ctx).Err(); err != nil {
		return Explain(ctx, rdb, err)
	}
	if _, ok := rdb.(*redis.Client); !ok {
		return nil
	}
	// Any error (a Redis that does not know the section, miniredis) means
	// no cluster: only a clear "cluster_enabled:1" counts.
	info, err := rdb.Info(ctx, "cluster").Result()
	if err == nil && strings.Contains(info, "cluster_enabled:1") {
		return fmt.Errorf("%w: list several seed addresses or select cluster mode (--redis-cluster)", ErrClusterNode)
	}
	return nil
}

// ForEachMaster calls fn with a client of every master of rdb: each master
// of a Redis Cluster (concurrently), or rdb itself for a single or Sentinel
// client. Commands without a key (INFO, SCAN, DBSIZE) need it on a
// cluster, where rdb would send them to one node.
func ForEachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, client *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("redisconn: unsupported client %T", rdb)
}

package httpserve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of Config.
const (
	// DefaultReadHeaderTimeout: a request's headers arrive in one round
	// trip or two.
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout bounds a whole request, body included: the API's
	// largest body (a few MiB) at well under 1 MiB/s.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds handling plus answer: above the API's
	// Kafka write timeout (10s) and pprof's default 30 s profile (pprof
	// refuses a profile that outlasts the server's WriteTimeout).
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection a minute after its
	// last request: longer than Prometheus's scrape interval, so scrapes
	// reuse their connection.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultMaxConns is the cap of connections served at once: far above
	// what Prometheus, probes, an ingress and a few operators open, far
	// below a process's file descriptor limit.
	DefaultMaxConns = 1000
	// DefaultShutdownGrace is how long Run lets requests in flight finish
	// once its context ends.
	DefaultShutdownGrace = 5 * time.Second
)

// ErrConfig is wrapped by the errors of Config.Validate.
var ErrConfig = errors.New("httpserve: invalid config")

// Config holds a server's limits. The zero value means the defaults.
type Config struct {
	ReadHeaderTimeout time.Duration // default 5s
	ReadTimeout       time.Duration // whole request, body included; default 30s
	WriteTimeout      time.Duration // handling and answer; default 60s
	IdleTimeout       time.Duration // keep-alive with no request; default 60s
	MaxConns          int           // connections served at once; default 1000
	ShutdownGrace     time.Duration // requests in flight at shutdown; default 5s
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.ShutdownGrace, DefaultShutdownGrace)
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"read header timeout", c.ReadHeaderTimeout}, {"read timeout", c.ReadTimeout},
		{"write timeout", c.WriteTimeout}, {"idle timeout", c.IdleTimeout}, {"shutdown grace", c.ShutdownGrace},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%w: %s %v is negative", ErrConfig, d.name, d.v))
		}
	}
	if c.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("%w: max conns %d is negative", ErrConfig, c.MaxConns))
	}
	return errors.Join(errs...)
}

// Server is an http.Server with the limits of a Config on a listener that
// caps its connections.
type Server struct {
	srv   *http.Server
	ln    net.Listener
	grace time.Duration
}

// New returns a Server that will serve h on ln with cfg's limits.
func New(ln net.Listener, h http.Handler, cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			ReadTimeout:       cfg.ReadTimeout,
			WriteTimeout:      cfg.WriteTimeout,
			IdleTimeout:       cfg.IdleTimeout,
		},
		ln:    limit(ln, cfg.MaxConns),
		grace: cfg.ShutdownGrace,
	}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Run serves until ctx ends, then shuts down: requests in flight get the
// shutdown grace to finish, the connections left are closed. It returns
// once serving has ended.
func (s *Server) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.srv.Serve(s.ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("http: serve %s: %w", s.ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.grace)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if err != nil {
		s.srv.Close()
		err = fmt.Errorf("http: shutdown %s: %w", s.ln.Addr(), err)
	}
	<-done // http.ErrServerClosed
	return err
}

// limit returns ln accepting at most n connections that are open at once.
// Accept waits for one to close; the connections beyond wait in the
// kernel's accept queue (the listen backlog), unanswered.
func limit(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// Loopback reports whether addr (host:port) listens on loopback only: a
// loopback IP or "localhost". An empty host (":9464") or 0.0.0.0 listens on
// every interface; any other name may resolve anywhere, so it is not
// loopback either.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	host, _, _ = strings.Cut(host, "%") // an IPv6 zone
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HostAllowed reports whether a request's Host header (with or without a
// port) names a server that answers to names: an IP literal, "localhost",
// or one of names (case-insensitive). An IP literal cannot be a DNS
// rebinding: only a name can be made to resolve to another site's address.
func HostAllowed(host string, names []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	if ip := net.ParseIP(strings.SplitN(host, "%", 2)[0]); ip != nil || strings.EqualFold(host, "localhost") {
		return true
	}
	return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(strings.TrimSuffix(n, "."), host) })
}

// Bearer reports whether r carries "Authorization: Bearer <token>",
// compared in constant time. An empty token never matches.
func Bearer(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// RequireBearer serves h only to requests that carry token (Bearer);
// others get 401 with a WWW-Authenticate header naming realm.
func RequireBearer(h http.Handler, token, realm string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Bearer(r, token) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", realm))
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

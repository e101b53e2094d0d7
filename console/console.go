package console

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"sync"

	"github.com/delayq/delayq/internal/httpserve"
)

//go:embed assets
var assets embed.FS

// ErrNotReady is answered (503) until Attach gave the console its backends.
var ErrNotReady = errors.New("console: delayd is starting, its backends are not ready yet")

// Console serves the pages and their API. It is safe for concurrent use.
type Console struct {
	cfg     Config
	static  http.Handler
	sampler sampler
	backlog backlogCache

	mu sync.RWMutex
	b  *Backends // nil until Attach
}

// New validates cfg and returns a Console without backends: its pages load
// and its API answers 503 until Attach.
func New(cfg Config) (*Console, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, fmt.Errorf("console: assets: %w", err)
	}
	c := &Console{
		cfg:     cfg,
		static:  http.StripPrefix("/ui/", http.FileServerFS(sub)),
		sampler: sampler{window: cfg.Window},
		backlog: backlogCache{ttl: cfg.BacklogTTL},
	}
	// The first sample, kept for good: the first page gets rates (since
	// now) instead of waiting for a second refresh.
	mfs, _ := cfg.Gatherer.Gather()
	c.sampler.start = readSample(cfg.Now(), mfs)
	return c, nil
}

// Attach hands the console the backends delayd's roles use. It may be
// called again (a restart of the roles) and replaces them.
func (c *Console) Attach(b Backends) {
	c.backlog.set(b.Index)
	c.mu.Lock()
	c.b = &b
	c.mu.Unlock()
}

func (c *Console) backends() *Backends {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.b
}

// Register adds the console's routes to mux: "/" redirects to "/ui/", the
// pages and assets under /ui/, the API under /ui/api/.
func (c *Console) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	mux.Handle("GET /ui/", c.secure(c.static))
	mux.Handle("GET /ui/api/overview", c.api(c.overview))
	mux.Handle("GET /ui/api/backlog", c.api(c.backlogView))
	mux.Handle("GET /ui/api/task", c.api(c.task))
	mux.Handle("GET /ui/api/tasks", c.api(c.tasks))
	mux.Handle("GET /ui/api/failed", c.api(c.failed))
	mux.Handle("POST /ui/api/task/cancel", c.api(c.action(c.cancel)))
	mux.Handle("POST /ui/api/failed/replay", c.api(c.action(c.replay)))
	c.registerTopics(mux)
	mux.Handle("GET /ui/api/", c.api(func(*http.Request) (any, error) {
		return nil, httpError{http.StatusNotFound, "no such API"}
	}))
}

// Handler returns a handler with only the console's routes.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	c.Register(mux)
	return mux
}

// secure answers only requests whose Host the console answers to (see
// Config.Hosts) and sets the headers every console response carries: no
// framing, no sniffing, scripts and styles only from the console itself.
func (c *Console) secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		if !httpserve.HostAllowed(r.Host, c.cfg.Hosts) {
			c.cfg.Logger.Warn("console request for another host refused", "host", r.Host, "remote", r.RemoteAddr)
			http.Error(w, "this console does not answer to the host "+strconv.Quote(r.Host)+": add the name to delayd's --console-hosts", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

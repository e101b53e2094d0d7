package api

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/payload"
)

// Defaults of Config.
const (
	DefaultAddr         = "127.0.0.1:8080"
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxBody leaves room for a payload of payload.DefaultMaxPayload
	// in base64 and JSON around it.
	DefaultMaxBody = 2*payload.DefaultMaxPayload + 64<<10
	// MinTokenLen is the shortest bearer token accepted.
	MinTokenLen = 16
	// DefaultRate is the requests a second one client IP may make: each
	// request waits for Kafka's acks, so a caller that needs more sends
	// Kafka messages (or raises --api-rate).
	DefaultRate = 200
	// DefaultMaxBatchBody bounds a batch's body: 1,000 tasks of about
	// 16 KiB each.
	DefaultMaxBatchBody = 16 << 20
	// DefaultMaxClients bounds the client IPs whose rate is tracked.
	DefaultMaxClients = 10000
)

// ErrConfig is wrapped by the errors of Config.Validate.
var ErrConfig = errors.New("api: invalid config")

// Config configures a Server. The zero value means the defaults.
type Config struct {
	// Addr is the listen address. Default 127.0.0.1:8080.
	Addr string
	// Listener, when set, is Addr already bound (delayd binds it before it
	// starts anything, so a taken port is refused at once); Run serves on
	// it and closes it.
	Listener net.Listener
	// Token, when set, must come with every /v1/tasks request as
	// "Authorization: Bearer <Token>"; at least MinTokenLen bytes.
	Token string
	// MaxBody bounds a request body in bytes. Default DefaultMaxBody.
	MaxBody int64
	// MaxBatchBody bounds the body of POST /v1/tasks:batch. Default
	// DefaultMaxBatchBody.
	MaxBatchBody int64
	// WriteTimeout bounds the write of one request to Kafka. Default 10s.
	WriteTimeout time.Duration
	// Rate is the requests a second one client IP may make, Burst how many
	// at once; beyond, 429 with Retry-After. Behind a proxy every client
	// shares the proxy's IP, and so its budget. Default DefaultRate, Burst
	// default Rate (one second's worth); negative Rate: no limit.
	Rate       float64
	Burst      int
	MaxClients int // client IPs tracked; default DefaultMaxClients
	// LocalHosts answers only requests whose Host is an IP literal,
	// localhost or Addr's host (421 otherwise): delayd sets it for an API
	// on loopback without a token, which a page of another site could
	// otherwise reach through DNS rebinding.
	LocalHosts bool
	// Serve are the server's timeouts and connection cap (package
	// httpserve); zero means its defaults, with ShutdownGrace defaulting
	// to WriteTimeout.
	Serve httpserve.Config
	// Decode is delayd's input validation (ingest's): what it refuses, the
	// API refuses with the same reason.
	Decode payload.DecodeConfig
	// Topics are the operators' topic controls (topicctl.Store) behind
	// /v1/topics…; nil: those routes answer 501.
	Topics Topics
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer for the API metrics; nil registers none.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxBatchBody == 0 {
		c.MaxBatchBody = DefaultMaxBatchBody
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Burst == 0 {
		c.Burst = max(1, int(math.Ceil(c.Rate)))
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.Serve.ShutdownGrace == 0 {
		c.Serve.ShutdownGrace = c.WriteTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if c.Token != "" && len(c.Token) < MinTokenLen {
		bad("token: %d bytes, want at least %d (DELAYQ_API_TOKEN)", len(c.Token), MinTokenLen)
	}
	if c.MaxBody < 0 || c.MaxBatchBody < 0 {
		bad("max body %d and max batch body %d must not be negative", c.MaxBody, c.MaxBatchBody)
	}
	if c.WriteTimeout < 0 {
		bad("write timeout %v is negative", c.WriteTimeout)
	}
	if c.Burst < 0 || c.MaxClients < 0 {
		bad("burst %d and max clients %d must not be negative", c.Burst, c.MaxClients)
	}
	if err := c.Serve.Validate(); err != nil {
		bad("%w", err)
	}
	if w := c.Serve.WriteTimeout; w != 0 && w <= c.WriteTimeout {
		bad("the server's write timeout %v must exceed the Kafka write timeout %v", w, c.WriteTimeout)
	}
	if err := c.Decode.Validate(); err != nil {
		bad("decode: %w", err)
	}
	return errors.Join(errs...)
}

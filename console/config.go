package console

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrConfig is wrapped by every error of Config.Validate.
var ErrConfig = errors.New("console: bad config")

// Config configures a Console. The zero value, plus a Gatherer, is a
// read-only console.
type Config struct {
	// Write enables the actions (cancel a task, replay failed messages).
	// Default off: the console only reads.
	Write bool
	// Token, when set, must be sent as "Authorization: Bearer <Token>"
	// with every API call, reads included: reads show task payloads and
	// every delay-failed message. Required with Write, so a write console
	// is never open to whoever reaches the port; at least 16 bytes. delayd
	// serves no console on an address other than loopback without it.
	Token string
	// Hosts are the names the console answers to in the Host header
	// besides "localhost" and IP literals: the name an ingress passes on,
	// a Service's DNS name. Any other name is refused (421), so a page of
	// another site cannot reach the console through DNS rebinding.
	Hosts []string
	// Gatherer is the registry the overview reads its figures from
	// (delayd's own). Required.
	Gatherer prometheus.Gatherer
	// Window is the span rates and lateness percentiles are computed over.
	// Default 1m: long enough to smooth batches, short enough to show an
	// incident while it happens.
	Window time.Duration
	// BacklogTTL is how long a backlog read is reused. Default 15s: the
	// dispatcher itself reads it once a minute, and one read costs a ZCARD
	// per segment and shard.
	BacklogTTL time.Duration
	// FailedLimit caps the messages one failed-topic page reads. Default 200.
	FailedLimit int
	// PreviewBytes caps the payload bytes a page shows. Default 4096.
	PreviewBytes int
	// Logger receives one line per action and per read that returns
	// payloads (who and what); nil discards.
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.Window == 0 {
		c.Window = time.Minute
	}
	if c.BacklogTTL == 0 {
		c.BacklogTTL = 15 * time.Second
	}
	if c.FailedLimit == 0 {
		c.FailedLimit = 200
	}
	if c.PreviewBytes == 0 {
		c.PreviewBytes = 4096
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// MinTokenLen is the shortest Token accepted.
const MinTokenLen = 16

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Write && c.Token == "" {
		errs = append(errs, fmt.Errorf("%w: write actions need a token (DELAYQ_CONSOLE_TOKEN)", ErrConfig))
	}
	if c.Token != "" && len(c.Token) < MinTokenLen {
		errs = append(errs, fmt.Errorf("%w: token is %d bytes, want at least %d", ErrConfig, len(c.Token), MinTokenLen))
	}
	if c.Gatherer == nil {
		errs = append(errs, fmt.Errorf("%w: no gatherer", ErrConfig))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"window", c.Window}, {"backlog ttl", c.BacklogTTL}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%w: %s %v is negative", ErrConfig, d.name, d.v))
		}
	}
	if c.FailedLimit < 0 || c.PreviewBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: failed limit %d and preview bytes %d must not be negative", ErrConfig, c.FailedLimit, c.PreviewBytes))
	}
	return errors.Join(errs...)
}

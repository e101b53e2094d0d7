package kafkaauth

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/delayq/delayq/internal/tlsfiles"
)

// SASL mechanisms of Config.SASL (the values of --kafka-sasl).
const (
	Plain       = "plain"
	ScramSHA256 = "scram-sha-256"
	ScramSHA512 = "scram-sha-512"
)

// Mechanisms are the values Config.SASL accepts besides "" (no SASL).
var Mechanisms = []string{Plain, ScramSHA256, ScramSHA512}

// ErrConfig is wrapped by every Config.Validate and Config.Load error.
var ErrConfig = errors.New("kafkaauth: invalid config")

// DialTimeout bounds one connection attempt (TCP, TLS and SASL) of the
// Transport and Dialer of an Auth; kafka-go's default dialer uses the same.
const DialTimeout = 10 * time.Second

// Config is how to secure the Kafka connections. The zero value is
// plaintext without SASL.
type Config struct {
	// TLS connects with TLS, verifying the brokers against CAFile, or the
	// system roots without it. CAFile, CertFile and KeyFile are PEM files;
	// CertFile and KeyFile (both or neither) are the client certificate
	// of mutual TLS. ServerName replaces the broker's host name in the
	// verification (a certificate issued for another name, a broker
	// reached by IP). Any of them implies TLS.
	TLS        bool
	CAFile     string
	CertFile   string
	KeyFile    string
	ServerName string
	// SASL is the mechanism: Plain, ScramSHA256, ScramSHA512, or "" for
	// none (case does not matter). User and Password are its credentials;
	// Password is never logged.
	SASL     string
	User     string
	Password string
}

// tls reports whether c asks for TLS, explicitly or through a TLS file.
func (c Config) tls() bool {
	return c.TLS || c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" || c.ServerName != ""
}

// Validate reports every problem of c at once, each wrapping ErrConfig. It
// does not read the files (Load does).
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if err := c.files().Validate(); err != nil {
		bad("kafka-tls: %w", err)
	}
	mech := strings.ToLower(c.SASL)
	switch {
	case mech == "":
		if c.User != "" || c.Password != "" {
			bad("a SASL user or password without a SASL mechanism (kafka-sasl: %s)", strings.Join(Mechanisms, ", "))
		}
	case mech != Plain && mech != ScramSHA256 && mech != ScramSHA512:
		bad("unknown SASL mechanism %q (want %s)", c.SASL, strings.Join(Mechanisms, ", "))
	default:
		if c.User == "" {
			bad("SASL %s needs a user (kafka-sasl-user)", mech)
		}
		if c.Password == "" {
			bad("SASL %s needs a password (DELAYQ_KAFKA_SASL_PASSWORD)", mech)
		}
	}
	return errors.Join(errs...)
}

// String describes c for people, for example "tls ca=/etc/ca.pem
// sasl=scram-sha-512 user=delayq password=set"; "plaintext" for the zero
// Config. It never shows the password.
func (c Config) String() string {
	var parts []string
	if c.tls() {
		parts = append(parts, "tls")
		for _, f := range []struct{ k, v string }{{"ca", c.CAFile}, {"cert", c.CertFile}, {"server_name", c.ServerName}} {
			if f.v != "" {
				parts = append(parts, f.k+"="+f.v)
			}
		}
	}
	if c.SASL != "" {
		parts = append(parts, "sasl="+strings.ToLower(c.SASL), "user="+c.User)
		if c.Password != "" {
			parts = append(parts, "password=set")
		}
	}
	if len(parts) == 0 {
		return "plaintext"
	}
	return strings.Join(parts, " ")
}

// LogValue logs c as a group (tls, ca, cert, server_name, sasl, user,
// password_set); never the password.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Bool("tls", c.tls())}
	for _, f := range []struct{ k, v string }{{"ca", c.CAFile}, {"cert", c.CertFile}, {"server_name", c.ServerName}} {
		if f.v != "" {
			attrs = append(attrs, slog.String(f.k, f.v))
		}
	}
	if c.SASL != "" {
		attrs = append(attrs, slog.String("sasl", strings.ToLower(c.SASL)), slog.String("user", c.User),
			slog.Bool("password_set", c.Password != ""))
	}
	return slog.GroupValue(attrs...)
}

// GoString keeps %#v from printing the password either.
func (c Config) GoString() string { return "kafkaauth.Config{" + c.String() + "}" }

// Load validates c, reads its files and returns the Auth of c: nil for
// plaintext without SASL.
func (c Config) Load() (*Auth, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var t *tls.Config
	if c.tls() {
		var err error
		if t, err = c.files().Load(c.ServerName); err != nil {
			return nil, fmt.Errorf("%w: kafka-tls: %w", ErrConfig, err)
		}
	}
	var (
		mech sasl.Mechanism
		err  error
	)
	switch strings.ToLower(c.SASL) {
	case Plain:
		mech = plain.Mechanism{Username: c.User, Password: c.Password}
	case ScramSHA256:
		mech, err = scram.Mechanism(scram.SHA256, c.User, c.Password)
	case ScramSHA512:
		mech, err = scram.Mechanism(scram.SHA512, c.User, c.Password)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: SASL %s: %w", ErrConfig, c.SASL, err)
	}
	if mech != nil {
		mech = userMechanism{mech, c.User}
	}
	return New(t, mech), nil
}

func (c Config) files() tlsfiles.Files {
	return tlsfiles.Files{CA: c.CAFile, Cert: c.CertFile, Key: c.KeyFile}
}

// userMechanism is a SASL mechanism that tells its user, for the messages
// of Explain (kafka-go's SCRAM mechanism does not).
type userMechanism struct {
	sasl.Mechanism
	user string
}

func (m userMechanism) User() string { return m.user }

// Auth is how a process secures its Kafka connections, ready to use. A nil
// *Auth is plaintext without SASL; every method works on it.
type Auth struct {
	tls       *tls.Config
	sasl      sasl.Mechanism
	user      string
	transport *kafka.Transport
}

// New returns the Auth of a TLS configuration and a SASL mechanism, either
// nil; nil when both are. The user in Explain's messages comes from the
// mechanism when it tells it (Config.Load's, kafka-go's PLAIN).
func New(t *tls.Config, mech sasl.Mechanism) *Auth {
	if t == nil && mech == nil {
		return nil
	}
	a := &Auth{tls: t, sasl: mech}
	switch m := mech.(type) {
	case interface{ User() string }:
		a.user = m.User()
	case plain.Mechanism:
		a.user = m.Username
	}
	a.transport = a.NewTransport()
	return a
}

// TLS is the TLS configuration of a; nil for none.
func (a *Auth) TLS() *tls.Config {
	if a == nil {
		return nil
	}
	return a.tls
}

// SASL is the SASL mechanism of a; nil for none.
func (a *Auth) SASL() sasl.Mechanism {
	if a == nil {
		return nil
	}
	return a.sasl
}

// MetadataTTL is how old the cached partition leaders of every transport
// made here get before it asks the brokers again. kafka-go refreshes them
// only when they are that old, not when a broker answers
// NOT_LEADER_OR_FOLLOWER: with its 6 s default, writes to a partition
// whose leader moved (a broker stopping, failing, coming back) failed for
// up to 6 s.
const MetadataTTL = time.Second

// plaintext is the shared transport of a nil Auth.
var plaintext = &kafka.Transport{DialTimeout: DialTimeout, MetadataTTL: MetadataTTL}

// Plaintext is the transport every nil Auth shares.
func Plaintext() kafka.RoundTripper { return plaintext }

// Transport is the kafka-go transport of a, for a kafka.Client or a
// kafka.Writer: one per Auth (one plaintext one for every nil Auth),
// shared by all of them, so that topics one creates are in the others'
// metadata at once.
func (a *Auth) Transport() kafka.RoundTripper {
	if a == nil {
		return plaintext
	}
	return a.transport
}

// NewTransport returns a transport of its own with a's TLS and SASL, for
// a short-lived kafka.Client; close its idle connections when done.
func (a *Auth) NewTransport() *kafka.Transport {
	return &kafka.Transport{DialTimeout: DialTimeout, MetadataTTL: MetadataTTL, TLS: a.TLS(), SASL: a.SASL()}
}

// Close closes the idle connections of a's transport and ends its
// background goroutines; a later use opens new ones. A Go client that
// made its own Auth calls it on Close.
func (a *Auth) Close() {
	if a != nil {
		a.transport.CloseIdleConnections()
	}
}

// Dialer returns a new kafka-go dialer with a's TLS and SASL, for a
// kafka.Reader, a consumer group or a kafka.Conn; timeout 0 means
// DialTimeout.
func (a *Auth) Dialer(timeout time.Duration) *kafka.Dialer {
	if timeout <= 0 {
		timeout = DialTimeout
	}
	return &kafka.Dialer{Timeout: timeout, DualStack: true, TLS: a.TLS(), SASLMechanism: a.SASL()}
}

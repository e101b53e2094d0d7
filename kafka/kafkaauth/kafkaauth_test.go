package kafkaauth

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/internal/tlsfiles/tlsfilestest"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // fragments of the error; none: valid
	}{
		{"zero is plaintext", Config{}, nil},
		{"tls with files", Config{TLS: true, CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem"}, nil},
		{"scram upper case", Config{SASL: "SCRAM-SHA-512", User: "u", Password: "p"}, nil},
		{"plain", Config{SASL: "plain", User: "u", Password: "p"}, nil},
		{"cert without key", Config{TLS: true, CertFile: "c.pem"}, []string{"both the certificate and the key"}},
		{"key without cert", Config{KeyFile: "k.pem"}, []string{"both the certificate and the key"}},
		{"unknown mechanism", Config{SASL: "gssapi", User: "u", Password: "p"}, []string{`unknown SASL mechanism "gssapi"`}},
		{"no user, no password", Config{SASL: "scram-sha-256"}, []string{"needs a user", "needs a password (DELAYQ_KAFKA_SASL_PASSWORD)"}},
		{"user without mechanism", Config{User: "u"}, []string{"without a SASL mechanism"}},
		{"everything wrong at once", Config{CertFile: "c", SASL: "x"}, []string{"key file", "unknown SASL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("Validate = %v, want ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestSecretsNeverShown(t *testing.T) {
	cfg := Config{TLS: true, CAFile: "/etc/ca.pem", SASL: "scram-sha-512", User: "delayq", Password: "hunter2"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "kafka", cfg)
	for _, s := range []string{cfg.String(), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg), buf.String()} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("password shown: %s", s)
		}
	}
	if got, want := cfg.String(), "tls ca=/etc/ca.pem sasl=scram-sha-512 user=delayq password=set"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if !strings.Contains(buf.String(), `"password_set":true`) {
		t.Errorf("log line %s lacks password_set", buf.String())
	}
	if got := (Config{}).String(); got != "plaintext" {
		t.Errorf("zero String = %q", got)
	}
}

func TestLoad(t *testing.T) {
	pki := tlsfilestest.New(t)
	a, err := Config{CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey, ServerName: "kafka-1",
		SASL: ScramSHA256, User: "u", Password: "p"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c := a.TLS(); c == nil || c.RootCAs == nil || len(c.Certificates) != 1 || c.ServerName != "kafka-1" {
		t.Errorf("TLS config %+v: want the CA, one client certificate and the server name", c)
	}
	if a.SASL() == nil || a.SASL().Name() != "SCRAM-SHA-256" || a.user != "u" {
		t.Errorf("SASL %v, user %q", a.SASL(), a.user)
	}
	if a, err := (Config{}).Load(); a != nil || err != nil || a.Transport() != Plaintext() {
		t.Errorf("zero Config loads %+v, %v: want nil (plaintext, the shared plaintext transport)", a, err)
	}
	for name, cfg := range map[string]Config{
		"missing CA":   {CAFile: filepath.Join(t.TempDir(), "none.pem")},
		"CA not PEM":   {CAFile: pki.ClientKey + ".txt"},
		"missing cert": {CertFile: "nope.pem", KeyFile: pki.ClientKey},
		"invalid":      {SASL: "plain"},
	} {
		if name == "CA not PEM" {
			os.WriteFile(cfg.CAFile, []byte("not pem"), 0o600)
		}
		if _, err := cfg.Load(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Load = %v, want ErrConfig", name, err)
		}
	}
}

// TestExplain connects kafka-go, through an Auth's Transport and Dialer, to
// in-process brokers that refuse it, and checks the one line that says why.
func TestExplain(t *testing.T) {
	pki := tlsfilestest.New(t)
	saslCluster := newCluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "alice", "right"))
	notTLS := notTLSServer(t)
	tlsCluster := newCluster(t, kfake.TLS(pki.ServerTLS(tls.NoClientCert)))
	mtlsCluster := newCluster(t, kfake.TLS(pki.ServerTLS(tls.RequireAndVerifyClientCert)))
	otherCA := tlsfilestest.New(t)

	tests := []struct {
		name    string
		addr    string
		cfg     Config
		want    string // prefix of the error; "" = connects
		contain string
	}{
		{"scram ok", saslCluster, Config{SASL: ScramSHA512, User: "alice", Password: "right"}, "", ""},
		{"wrong password", saslCluster, Config{SASL: ScramSHA512, User: "alice", Password: "wrong"},
			`kafka: SASL authentication failed for user "alice" (SCRAM-SHA-512)`, ""},
		{"unknown user", saslCluster, Config{SASL: ScramSHA512, User: "bob", Password: "right"},
			`kafka: SASL authentication failed for user "bob"`, ""},
		{"no credential for the mechanism", saslCluster, Config{SASL: ScramSHA256, User: "alice", Password: "right"},
			`kafka: SASL authentication failed for user "alice" (SCRAM-SHA-256)`, ""},
		{"tls ok", tlsCluster, Config{CAFile: pki.CAFile}, "", ""},
		{"unknown CA", tlsCluster, Config{CAFile: otherCA.CAFile},
			"kafka: TLS handshake: certificate signed by unknown authority", ""},
		{"wrong server name", tlsCluster, Config{CAFile: pki.CAFile, ServerName: "kafka.example"},
			"kafka: TLS handshake: certificate is valid for", "kafka.example"},
		{"tls to a server that does not speak it", notTLS, Config{TLS: true},
			"kafka: TLS handshake: the broker did not answer with TLS", ""},
		{"mutual tls ok", mtlsCluster, Config{CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey}, "", ""},
		{"missing client certificate", mtlsCluster, Config{CAFile: pki.CAFile},
			"kafka: TLS handshake: the broker refused the connection", "does it require a client certificate?"},
		{"client certificate of another CA", mtlsCluster, Config{CAFile: pki.CAFile, CertFile: otherCA.ClientCert, KeyFile: otherCA.ClientKey},
			"kafka: TLS handshake: the broker refused the connection", "signed by a CA it trusts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.cfg.Load()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			defer a.Close()
			client := &kafka.Client{Addr: kafka.TCP(tt.addr), Transport: a.Transport()}
			_, terr := client.Metadata(ctx, &kafka.MetadataRequest{})
			// Any other request answers BrokerNotAvailable: Diagnose finds why.
			_, aerr := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "t2", NumPartitions: 1, ReplicationFactor: 1}}})
			aerr = a.Diagnose(ctx, client, aerr)
			conn, derr := a.Dialer(5*time.Second).DialContext(ctx, "tcp", tt.addr)
			if derr == nil {
				_, derr = conn.ApiVersions()
				conn.Close()
			}
			for via, err := range map[string]error{"transport": terr, "admin": aerr, "dialer": derr} {
				err = a.Explain(err)
				want := tt.want
				if via != "dialer" && strings.HasPrefix(want, "kafka: SASL authentication failed") {
					// kfake closes the connection on a refused login, which
					// the Transport reports as an unexpected EOF (the Dialer
					// turns an EOF into SASLAuthenticationFailed); Apache
					// Kafka answers SASL_AUTHENTICATION_FAILED first.
					want = "kafka: the broker closed the connection (kafka.(*Client).Metadata: unexpected EOF): a listener with other TLS or SASL settings than these (TLS off, SASL " +
						a.SASL().Name() + ` as user "` + tt.cfg.User + `"), or a refused login, does that`
				}
				if tt.want == "" {
					if err != nil {
						t.Errorf("%s: %v, want a connection", via, err)
					}
					continue
				}
				var e *Error
				if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tt.contain) {
					t.Errorf("%s: %v (%T), want an *Error starting %q containing %q", via, err, errors.Unwrap(err), want, tt.contain)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("%s: %q is more than one line", via, err)
				}
			}
		})
	}
}

func TestExplainLeavesOtherErrors(t *testing.T) {
	var plain *Auth
	for _, err := range []error{nil, kafka.UnknownTopicOrPartition, context.DeadlineExceeded, errors.New("dial tcp: connection refused")} {
		if got := plain.Explain(err); got != err {
			t.Errorf("Explain(%v) = %v, want it unchanged", err, got)
		}
	}
	once := plain.Explain(fmt.Errorf("fetch: %w", kafka.SASLAuthenticationFailed))
	if twice := plain.Explain(fmt.Errorf("again: %w", once)); !errors.Is(twice, once) || strings.Count(twice.Error(), "SASL authentication failed") != 1 {
		t.Errorf("Explain twice = %v", twice)
	}
}

// notTLSServer answers every connection with a line of plain text, as a
// server that does not speak TLS would.
func notTLSServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestNewTakesTheUserFromPlain(t *testing.T) {
	a := New(nil, plain.Mechanism{Username: "carol", Password: "x"})
	err := a.Explain(fmt.Errorf("write: %w", kafka.SASLAuthenticationFailed))
	if want := `kafka: SASL authentication failed for user "carol" (PLAIN)`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Explain = %q, want it to start %q", err, want)
	}
	if New(nil, nil) != nil {
		t.Error("New(nil, nil) is not nil")
	}
}

func newCluster(t *testing.T, opts ...kfake.Opt) string {
	t.Helper()
	c, err := kfake.NewCluster(append(opts, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

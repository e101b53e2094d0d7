package redisconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/tlsfiles/tlsfilestest"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		bad  []string // substrings of the expected errors; none = valid
	}{
		{"zero value", Config{}, nil},
		{"cluster seeds", Config{Addrs: []string{"10.0.0.1:7001", "10.0.0.2:7001", "[::1]:7003"}}, nil},
		{"sentinel", Config{Addrs: []string{"s1:26379", "s2:26379"}, MasterName: "mymaster", Password: "p"}, nil},
		{"acl user", Config{Username: "delayq", Password: "p", TLS: true}, nil},
		{"no port", Config{Addrs: []string{"localhost"}}, []string{`"localhost" is not host:port`}},
		{"empty host", Config{Addrs: []string{":6379"}}, []string{`":6379" is not host:port`}},
		{"twice", Config{Addrs: []string{"a:1", "a:1"}}, []string{`"a:1" given twice`}},
		{"master and cluster", Config{MasterName: "m", Cluster: true}, []string{"exclude each other"}},
		{"user without password", Config{Username: "u"}, []string{`username "u" without a password`}},
		{"every problem at once", Config{Addrs: []string{"x"}, Username: "u", DialTimeout: -1, DialerRetries: -1, MaxRetries: -2},
			[]string{"not host:port", "without a password", "dial timeout", "dialer retries", "max retries"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			c.setDefaults()
			err := c.Validate()
			if len(tt.bad) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("Validate() = %v, want an ErrConfig", err)
			}
			for _, want := range tt.bad {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %v, want it to say %q", err, want)
				}
			}
			if _, err := New(tt.cfg); !errors.Is(err, ErrConfig) {
				t.Errorf("New() = %v, want an ErrConfig", err)
			}
		})
	}
}

func TestValidateEmptyAddrs(t *testing.T) {
	if err := (&Config{}).Validate(); !errors.Is(err, ErrConfig) {
		t.Fatalf("Validate() of no address = %v, want ErrConfig", err)
	}
}

func TestSplitAddrs(t *testing.T) {
	got := SplitAddrs(" a:1, b:2,,c:3 ,")
	if strings.Join(got, "|") != "a:1|b:2|c:3" {
		t.Fatalf("SplitAddrs = %q", got)
	}
	if got := SplitAddrs(" "); got != nil {
		t.Fatalf("SplitAddrs(blank) = %q, want nil", got)
	}
}

// New picks the engine the way the package doc says, and passes the
// settings through.
func TestNewModes(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		mode     string
		wantType string
	}{
		{"default", Config{}, ModeSingle, "*redis.Client"},
		{"one address", Config{Addrs: []string{"h:1"}}, ModeSingle, "*redis.Client"},
		{"several", Config{Addrs: []string{"h:1", "h:2", "h:3"}}, ModeCluster, "*redis.ClusterClient"},
		{"one seed, cluster", Config{Addrs: []string{"h:1"}, Cluster: true}, ModeCluster, "*redis.ClusterClient"},
		{"sentinel", Config{Addrs: []string{"s:1", "s:2"}, MasterName: "m"}, ModeSentinel, "*redis.Client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m := tt.cfg.withDefaults().Mode(); m != tt.mode {
				t.Errorf("Mode() = %q, want %q", m, tt.mode)
			}
			rdb, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			if got := fmt.Sprintf("%T", rdb); got != tt.wantType {
				t.Errorf("New() = %s, want %s", got, tt.wantType)
			}
		})
	}
}

func (c Config) withDefaults() Config { c.setDefaults(); return c }

func TestOptions(t *testing.T) {
	o, err := Config{Addrs: []string{"h:1"}, Username: "u", Password: "p", TLS: true, DialTimeout: 7, DialerRetries: 1, MaxRetries: -1}.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Username != "u" || o.Password != "p" || o.DialTimeout != 7 || o.DialerRetries != 1 || o.MaxRetries != -1 {
		t.Errorf("options not passed through: %+v", o)
	}
	if o.TLSConfig == nil || o.TLSConfig.MinVersion == 0 || o.TLSConfig.InsecureSkipVerify {
		t.Errorf("TLS: %+v, want a verifying TLS 1.2+ config", o.TLSConfig)
	}
	if o, _ := (Config{}).Options(); o.TLSConfig != nil || len(o.Addrs) != 1 || o.Addrs[0] != DefaultAddr {
		t.Errorf("zero Config: TLS %v, addrs %v", o.TLSConfig, o.Addrs)
	}
}

// TestMutualTLS connects to a Redis that requires a client certificate
// signed by its CA: with --redis-tls-ca, --redis-tls-cert and
// --redis-tls-key it answers; without the certificate, or with only the
// system roots, it does not.
func TestMutualTLS(t *testing.T) {
	pki, m := mutualTLSRedis(t)
	tests := []struct {
		name string
		cfg  Config
		want string // fragment of the error; "" = PONG
	}{
		{"ca and client certificate", Config{TLSCA: pki.CAFile, TLSCert: pki.ClientCert, TLSKey: pki.ClientKey}, ""},
		{"no client certificate", Config{TLSCA: pki.CAFile}, "certificate required"},
		{"system roots", Config{TLS: true, TLSCert: pki.ClientCert, TLSKey: pki.ClientKey}, "unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Addrs = []string{m.Addr()}
			tt.cfg.DialerRetries, tt.cfg.MaxRetries = 1, -1
			rdb, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			err = rdb.Ping(t.Context()).Err()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("PING: %v, want %q", err, tt.want)
			}
		})
	}
	for name, cfg := range map[string]Config{
		"cert without key": {TLSCert: pki.ClientCert},
		"missing CA file":  {TLSCA: pki.CAFile + ".missing"},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: New = %v, want ErrConfig", name, err)
		}
	}
	if s := (Config{TLSCA: "/etc/ca.pem"}).String(); !strings.Contains(s, " tls tls_ca=/etc/ca.pem") {
		t.Errorf("String = %q, want tls and the CA file", s)
	}
}

// The password shows nowhere: String, %v, %+v, %#v, slog text and JSON.
func TestSecretNeverPrinted(t *testing.T) {
	const secret = "s3cr3t-pa55"
	c := Config{Addrs: []string{"a:1", "b:2"}, Username: "delayq", Password: secret, TLS: true}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "redis", c)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "redis", c)
	out := strings.Join([]string{c.String(), fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), buf.String()}, "\n")
	if strings.Contains(out, secret) {
		t.Fatalf("password printed:\n%s", out)
	}
	for _, want := range []string{"cluster a:1,b:2 user=delayq password=set tls", "password_set=true", `"password_set":true`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	s := Config{Addrs: []string{"s:1"}, MasterName: "mymaster"}.String()
	if s != "sentinel master=mymaster via s:1" {
		t.Errorf("String() = %q", s)
	}
}

// Ping and ForEachMaster on a single Redis (miniredis answers no INFO
// cluster section: not a cluster node). The cluster cases run against a
// real Redis Cluster in e2e/cluster.
func TestPingSingle(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.RequireAuth("pw")
	rdb, err := New(Config{Addrs: []string{mr.Addr()}, Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	if err := Ping(ctx, rdb); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	calls := 0
	if err := ForEachMaster(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		calls++
		return c.Set(ctx, "k", "v", 0).Err()
	}); err != nil || calls != 1 {
		t.Fatalf("ForEachMaster: %v after %d calls, want 1 call", err, calls)
	}
	if mr.Keys()[0] != "k" {
		t.Fatalf("keys %v", mr.Keys())
	}

	wrong, _ := New(Config{Addrs: []string{mr.Addr()}, Password: "nope", MaxRetries: -1})
	defer wrong.Close()
	if err := Ping(ctx, wrong); err == nil {
		t.Fatal("Ping with a wrong password succeeded")
	}
}

// TestExplainCertificateRequired: whatever error a client without its
// certificate saw first (in TLS 1.3 often a reset connection, when its
// command went out before the server's alert came in), Explain names the
// server's cause; a Redis that answered, or a session the server keeps,
// leaves the error as it was.
func TestExplainCertificateRequired(t *testing.T) {
	pki, m := mutualTLSRedis(t)
	reset := errors.New("write tcp 127.0.0.1:1->127.0.0.1:2: write: connection reset by peer")
	client := func(cfg Config) redis.UniversalClient {
		cfg.Addrs, cfg.DialerRetries, cfg.MaxRetries = []string{m.Addr()}, 1, -1
		rdb, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	noCert := client(Config{TLSCA: pki.CAFile})
	got := Explain(t.Context(), noCert, reset)
	if !strings.Contains(got.Error(), "certificate required") || !errors.Is(got, reset) {
		t.Errorf("Explain without a client certificate = %v, want the alert, wrapping the first error", got)
	}
	if err := Ping(t.Context(), noCert); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("Ping without a client certificate = %v, want it to name the alert", err)
	}
	withCert := client(Config{TLSCA: pki.CAFile, TLSCert: pki.ClientCert, TLSKey: pki.ClientKey})
	if got := Explain(t.Context(), withCert, reset); got != reset {
		t.Errorf("Explain with the certificate = %v, want the error unchanged", got)
	}
	plain := miniredis.RunT(t)
	answered := redis.NewClient(&redis.Options{Addr: plain.Addr()}).Do(t.Context(), "nosuchcommand").Err()
	var re redis.Error
	if !errors.As(answered, &re) {
		t.Fatalf("nosuchcommand answered %v, want an error of Redis", answered)
	}
	if got := Explain(t.Context(), noCert, answered); got != answered {
		t.Errorf("Explain of an answer of Redis = %v, want it unchanged", got)
	}
}

// mutualTLSRedis is a miniredis on TLS that requires a client certificate
// of pki, closed when the test ends.
func mutualTLSRedis(t *testing.T) (*tlsfilestest.PKI, *miniredis.Miniredis) {
	t.Helper()
	pki := tlsfilestest.New(t)
	m, err := miniredis.RunTLS(pki.ServerTLS(tls.RequireAndVerifyClientCert))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return pki, m
}

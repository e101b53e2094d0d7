package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// Bad flags and environment end delayd with an error that names the flag or
// the variable, before anything starts.
func TestRunRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{name: "bad duration flag", args: []string{"--tick", "soon"}, want: `invalid value "soon" for flag -tick`},
		{name: "bad env names variable", env: map[string]string{"DELAYQ_MAX_DELAY": "forever"}, want: "DELAYQ_MAX_DELAY"},
		{name: "unknown role", args: []string{"--roles", "ingest,janitor"}, want: `unknown role "janitor"`},
		{name: "tick below minimum from env", env: map[string]string{"DELAYQ_TICK": "100ms"}, want: "tick 100ms: want whole seconds, at least 1s"},
		{name: "segment over a day", args: []string{"--segment", "48h"}, want: "segment 48h0m0s: want whole seconds from 1s to 24h"},
		{name: "bad log level", args: []string{"--log-level", "loud"}, want: "--log-level"},
		{name: "api open on all interfaces", args: []string{"--roles", "ingest,api", "--api", "0.0.0.0:8080"}, want: "set DELAYQ_API_TOKEN"},
		{name: "api open from env", env: map[string]string{"DELAYQ_ROLES": "api", "DELAYQ_API": ":8080"}, want: "--api-insecure"},
		{name: "unknown flag", args: []string{"--brokerz", "x"}, want: "flag provided but not defined: -brokerz"},
		{name: "unknown SASL mechanism", args: []string{"--kafka-sasl", "gssapi"}, want: `unknown SASL mechanism "gssapi"`},
		{name: "SASL without password", env: map[string]string{"DELAYQ_KAFKA_SASL": "scram-sha-512", "DELAYQ_KAFKA_SASL_USER": "delayq"},
			want: "needs a password (DELAYQ_KAFKA_SASL_PASSWORD)"},
		{name: "Kafka client certificate without key", args: []string{"--kafka-tls-cert", "c.pem"}, want: "both the certificate and the key"},
		{name: "missing Kafka CA file", args: []string{"--kafka-tls-ca", "/nonexistent/ca.pem"}, want: "/nonexistent/ca.pem"},
		{name: "Redis client certificate without key", env: map[string]string{"DELAYQ_REDIS_TLS_CERT": "c.pem"}, want: "redis"},
		{name: "relative znode parent", args: []string{"--hbase-zk-root", "hbase-unsecure"}, want: `hbase-zk-root: "hbase-unsecure"`},
		{name: "embedded Kafka is plaintext", args: []string{"--embedded", "--kafka-tls", "--brokers", "127.0.0.1:0", "--redis", "127.0.0.1:0"},
			want: "embedded mode serves plaintext Kafka"},
		{name: "prefetch too long", args: []string{"--scan-prefetch", "2s"}, want: "scan-prefetch: 2s is more than 1s"},
		{name: "negative min replicas from env", env: map[string]string{"DELAYQ_REDIS_MIN_REPLICAS": "-1"}, want: "redis-min-replicas: -1 is negative"},
		{name: "embedded Redis has no replicas", args: []string{"--embedded", "--redis-min-replicas", "1", "--brokers", "127.0.0.1:0", "--redis", "127.0.0.1:0"},
			want: "the embedded Redis has no replicas"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			err := run(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// --version prints one line and starts nothing.
func TestRunVersion(t *testing.T) {
	out := captureStdout(t, func() {
		if err := run([]string{"--version"}); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.HasPrefix(out, "delayd devel (commit ") || strings.Count(out, "\n") != 1 {
		t.Errorf("delayd --version printed %q", out)
	}
}

func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	f()
	w.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

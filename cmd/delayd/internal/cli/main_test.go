package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/delayq/delayq/cmd/internal/envflag"
	"github.com/delayq/delayq/daemon"
)

// runMain runs Main with args and the environment env and returns its
// exit code, stdout and stderr.
func runMain(t *testing.T, args []string, env map[string]string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(t.Context(), args, IO{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

// Bad flags, environment and configuration end delayd with exit code 2
// and an error that names the flag or the variable, before anything
// starts; a failure that is not the command line's exits 1.
func TestMainRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
		code int
	}{
		{name: "bad duration flag", args: []string{"--tick", "soon"}, want: `--tick="soon": not a duration`, code: 2},
		{name: "bad env names variable", env: map[string]string{"DELAYQ_MAX_DELAY": "forever"}, want: `DELAYQ_MAX_DELAY="forever": not a duration`, code: 2},
		{name: "an argument", args: []string{"embedded"}, want: `"embedded": delayd takes no arguments`, code: 2},
		{name: "unknown role", args: []string{"--roles", "ingest,janitor"}, want: `unknown role "janitor"`, code: 2},
		{name: "tick below minimum from env", env: map[string]string{"DELAYQ_TICK": "100ms"}, want: "tick 100ms: want whole seconds, at least 1s", code: 2},
		{name: "segment over a day", args: []string{"--segment", "48h"}, want: "segment 48h0m0s: want whole seconds from 1s to 24h", code: 2},
		{name: "bad log level", args: []string{"--log-level", "loud"}, want: "--log-level", code: 2},
		{name: "api open on all interfaces", args: []string{"--roles", "ingest,api", "--api", "0.0.0.0:8080"}, want: "set DELAYQ_API_TOKEN", code: 2},
		{name: "api open from env", env: map[string]string{"DELAYQ_ROLES": "api", "DELAYQ_API": ":8080"}, want: "--api-insecure", code: 2},
		{name: "short API token", args: []string{"--roles", "api"}, env: map[string]string{"DELAYQ_API_TOKEN": "12345"},
			want: "DELAYQ_API_TOKEN: 5 bytes, want at least 16", code: 2},
		{name: "short console token", env: map[string]string{"DELAYQ_CONSOLE_TOKEN": "12345"}, want: "DELAYQ_CONSOLE_TOKEN: 5 bytes, want at least 16", code: 2},
		{name: "unknown flag", args: []string{"--brokerz", "x"}, want: "--brokerz: unknown flag (did you mean --brokers?)", code: 2},
		{name: "unknown SASL mechanism", args: []string{"--kafka-sasl", "gssapi"}, want: `unknown SASL mechanism "gssapi"`, code: 2},
		{name: "SASL without password", env: map[string]string{"DELAYQ_KAFKA_SASL": "scram-sha-512", "DELAYQ_KAFKA_SASL_USER": "delayq"},
			want: "needs a password (DELAYQ_KAFKA_SASL_PASSWORD)", code: 2},
		{name: "Kafka client certificate without key", args: []string{"--kafka-tls-cert", "c.pem"}, want: "both the certificate and the key", code: 2},
		{name: "missing Kafka CA file", args: []string{"--kafka-tls-ca", "/nonexistent/ca.pem"}, want: "/nonexistent/ca.pem", code: 1},
		{name: "Redis client certificate without key", env: map[string]string{"DELAYQ_REDIS_TLS_CERT": "c.pem"}, want: "redis", code: 2},
		{name: "relative znode parent", args: []string{"--hbase-zk-root", "hbase-unsecure"}, want: `hbase-zk-root: "hbase-unsecure"`, code: 2},
		{name: "embedded Kafka is plaintext", args: []string{"--embedded", "--kafka-tls", "--brokers", "127.0.0.1:0", "--redis", "127.0.0.1:0"},
			want: "embedded mode serves plaintext Kafka", code: 2},
		{name: "prefetch too long", args: []string{"--scan-prefetch", "2s"}, want: "scan-prefetch: 2s is more than 1s", code: 2},
		{name: "negative min replicas from env", env: map[string]string{"DELAYQ_REDIS_MIN_REPLICAS": "-1"}, want: "redis-min-replicas: -1 is negative", code: 2},
		{name: "embedded Redis has no replicas", args: []string{"--embedded", "--redis-min-replicas", "1", "--brokers", "127.0.0.1:0", "--redis", "127.0.0.1:0"},
			want: "the embedded Redis has no replicas", code: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runMain(t, tc.args, tc.env)
			if code != tc.code || !strings.HasPrefix(errs, "delayd: ") || !strings.Contains(errs, tc.want) || out != "" {
				t.Fatalf("delayd %q: exit %d, stdout %q, stderr %q; want exit %d and an error containing %q", tc.args, code, out, errs, tc.code, tc.want)
			}
		})
	}
}

// A typo in a flag and a bad DELAYQ_* value are ONE line each: the flag
// or variable, the value, what is wrong and a hint; exit code 2.
func TestMainUsageErrorIsOneLine(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{name: "typo", args: []string{"--embeded"},
			want: "delayd: --embeded: unknown flag (did you mean --embedded?); run delayd --help\n"},
		{name: "bad variable", env: map[string]string{"DELAYQ_TICK": "banana"},
			want: "delayd: DELAYQ_TICK=\"banana\": not a duration (like 1s, 500ms or 1m30s); run delayd --help\n"},
		{name: "bad flag value", args: []string{"--embedded", "--tick=banana"},
			want: "delayd: --tick=\"banana\": not a duration (like 1s, 500ms or 1m30s); run delayd --help\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runMain(t, tc.args, tc.env)
			if code != ExitUsage || errs != tc.want || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and stderr %q", code, out, errs, tc.want)
			}
		})
	}
}

// Every flag is in exactly one group of --help, and every group names
// flags that exist: a new flag without a group fails here.
func TestEveryFlagInOneGroup(t *testing.T) {
	cfg := daemon.DefaultConfig()
	fs, _ := NewFlagSet(&cfg)
	in := map[string][]string{}
	for _, g := range groups {
		for _, name := range g.flags {
			in[name] = append(in[name], g.title)
			if fs.Lookup(name) == nil {
				t.Errorf("group %q names --%s, which delayd does not have", g.title, name)
			}
		}
	}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if len(in[f.Name]) != 1 {
			t.Errorf("--%s is in %d groups of delayd --help (%q); put it in exactly one (groups in help.go)", f.Name, len(in[f.Name]), in[f.Name])
		}
	})
	if n < 50 {
		t.Fatalf("only %d flags registered", n)
	}
}

// delayd --help starts with what delayd is, then lists every flag once
// under its group, on a line that names its DELAYQ_* variable.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		code, out, errs := runMain(t, []string{arg}, nil)
		if code != ExitOK || errs != "" {
			t.Fatalf("delayd %s: exit %d, stderr %q", arg, code, errs)
		}
		if !strings.HasPrefix(out, "delayd runs delayq, the delay service for Kafka") {
			t.Fatalf("delayd %s starts with %q", arg, out[:min(len(out), 80)])
		}
		lines := strings.Split(out, "\n")
		pos := 0
		for k, g := range groups {
			i := indexFrom(lines, pos, g.title+":")
			if i < 0 {
				t.Fatalf("no group %q after line %d", g.title, pos)
			}
			pos = i
			next := len(lines)
			if k+1 < len(groups) {
				next = indexFrom(lines, pos, groups[k+1].title+":")
			}
			for _, name := range g.flags {
				var found []string
				for _, l := range lines {
					if strings.HasPrefix(l, "  --"+name+" ") {
						found = append(found, l)
					}
				}
				if len(found) != 1 || !strings.Contains(found[0], " "+envflag.Var(name)) {
					t.Errorf("--%s: lines %q; want one that names %s", name, found, envflag.Var(name))
				}
				if j := indexPrefix(lines, "  --"+name+" "); j < pos || next >= 0 && j > next {
					t.Errorf("--%s (line %d) is not under %q (lines %d to %d)", name, j, g.title, pos, next)
				}
			}
		}
		for _, v := range []string{"DELAYQ_API_TOKEN", "DELAYQ_CONSOLE_TOKEN", "Exit codes: 0", "Examples:"} {
			if !strings.Contains(out, v) {
				t.Errorf("delayd --help does not mention %s", v)
			}
		}
	}
}

func indexFrom(lines []string, from int, line string) int {
	for i := from; i < len(lines); i++ {
		if lines[i] == line {
			return i
		}
	}
	return -1
}

func indexPrefix(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// --version prints one line and starts nothing.
func TestMainVersion(t *testing.T) {
	code, out, errs := runMain(t, []string{"--version"}, nil)
	if code != ExitOK || errs != "" || !strings.HasPrefix(out, "delayd devel (commit ") || strings.Count(out, "\n") != 1 {
		t.Errorf("delayd --version: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

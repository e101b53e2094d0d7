package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/cmd/delayctl/internal/backfill"
	"github.com/delayq/delayq/zset"
)

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

func TestParseTime(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{in: "2030-01-02T03:04:05Z", want: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
		{in: "2030-01-02T03:04:05.123+02:00", want: time.Date(2030, 1, 2, 1, 4, 5, 123_000_000, time.UTC)},
		{in: "2030-01-02", want: time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)},
		{in: "1893553445000", want: time.UnixMilli(1893553445000)},
		{in: "0", want: time.UnixMilli(0)},
		{in: "now", want: testNow},
		{in: " now ", want: testNow},
		{in: "-1h", want: testNow.Add(-time.Hour)},
		{in: "+30m", want: testNow.Add(30 * time.Minute)},
		{in: "-2d", want: testNow.Add(-48 * time.Hour)},
		{in: "-1d12h", want: testNow.Add(-36 * time.Hour)},
		{in: "+90", want: testNow.Add(90 * time.Second)},
		{in: "tomorrow", wantErr: `"tomorrow": not RFC 3339`},
		{in: "", wantErr: "empty"},
		{in: "2030-13-01", wantErr: "not RFC 3339"},
		{in: "2030-01-02T03:04:05", wantErr: "not RFC 3339"}, // no zone
		{in: "-", wantErr: "not RFC 3339"},
		{in: "-x", wantErr: "not RFC 3339"},
		{in: "--1h", wantErr: "not RFC 3339"},
		{in: "1969-12-31T23:00:00Z", wantErr: "before 1970"},
		{in: "99999999999999999999", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTime(tt.in, testNow)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tt.want) {
				t.Fatalf("%v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseHeaders(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []kafka.Header
		wantErr string
	}{
		{name: "none"},
		{name: "two", in: []string{"a=1", "b=x=y"}, want: []kafka.Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("x=y")}}},
		{name: "empty value", in: []string{"a="}, want: []kafka.Header{{Key: "a", Value: []byte{}}}},
		{name: "repeated key", in: []string{"a=1", "a=2"}, want: []kafka.Header{{Key: "a", Value: []byte("1")}, {Key: "a", Value: []byte("2")}}},
		{name: "no equals", in: []string{"a"}, wantErr: `-H "a": want key=value`},
		{name: "empty key", in: []string{"=v"}, wantErr: "empty header key"},
		{name: "control", in: []string{"delay-at=1"}, wantErr: "delay control header"},
		{name: "other delay- header", in: []string{"delay-x=1"}, want: []kafka.Header{{Key: "delay-x", Value: []byte("1")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseHeaders(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].Key != tt.want[i].Key || string(got[i].Value) != string(tt.want[i].Value) {
					t.Fatalf("%v, want %v", got, tt.want)
				}
			}
		})
	}
}

// run runs delayctl in-process with a fixed clock and the given
// environment.
func run(t *testing.T, env map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(t.Context(), args, IO{
		Stdin:  strings.NewReader(stdin),
		Stdout: &out,
		Stderr: &errOut,
		Getenv: func(k string) string { return env[k] },
		Now:    func() time.Time { return testNow },
	})
	return out.String(), errOut.String(), code
}

// TestErrorLines checks that bad input and unreachable services give one
// line on stderr naming the flag, variable or service, and the exit code.
// None of the cases needs a running service: the unreachable ones use
// port 1.
func TestErrorLines(t *testing.T) {
	const down = "127.0.0.1:1"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want []string // substrings of the one stderr line
	}{
		{name: "bad time", args: []string{"submit", "--topic", "t", "--at", "tomorrow", "v"}, code: 2,
			want: []string{"delayctl submit:", `"--at"`, "tomorrow", "RFC 3339"}},
		{name: "bad duration", args: []string{"submit", "--topic", "t", "--after", "soon", "v"}, code: 2,
			want: []string{`"--after"`, "soon"}},
		{name: "negative after", args: []string{"submit", "--topic", "t", "--after", "-5s", "v"}, code: 2,
			want: []string{`"--after"`, "-5s"}},
		{name: "no topic", args: []string{"submit", "--after", "1s", "v"}, code: 2, want: []string{"--topic is required"}},
		{name: "bad cron", args: []string{"submit", "--topic", "t", "--after", "1s", "--cron", "61 * * * *", "v"}, code: 2,
			want: []string{"delayctl submit:", "cron"}},
		{name: "every and cron", args: []string{"submit", "--topic", "t", "--after", "1s", "--every", "1h", "--cron", "@daily", "v"}, code: 2,
			want: []string{"delayctl submit:", "every", "cron"}},
		{name: "bad every", args: []string{"submit", "--topic", "t", "--after", "1s", "--every", "often", "v"}, code: 2,
			want: []string{`"--every"`, "often"}},
		{name: "no time", args: []string{"submit", "--topic", "t", "v"}, code: 2, want: []string{"--at or --after is required"}},
		{name: "both times", args: []string{"submit", "--topic", "t", "--at", "now", "--after", "1s", "v"}, code: 2,
			want: []string{"--at and --after", "not both"}},
		{name: "bad header", args: []string{"submit", "--topic", "t", "--after", "1s", "-H", "nokey", "v"}, code: 2,
			want: []string{`-H "nokey"`}},
		{name: "two values", args: []string{"submit", "--topic", "t", "--after", "1s", "a", "b"}, code: 2,
			want: []string{"at most one argument"}},
		{name: "value and file", args: []string{"submit", "--topic", "t", "--after", "1s", "--file", "x", "a"}, code: 2,
			want: []string{"not both"}},
		{name: "missing file", args: []string{"submit", "--topic", "t", "--after", "1s", "--file", "/nonexistent/v"}, code: 2,
			want: []string{"--file", "/nonexistent/v"}},
		{name: "bad node", args: []string{"submit", "--topic", "t", "--after", "1s", "--node", "1024", "v"}, code: 2,
			want: []string{`"--node"`, "0..1023"}},
		{name: "long id", args: []string{"submit", "--topic", "t", "--after", "1s", "--id", strings.Repeat("x", 129), "v"}, code: 2,
			want: []string{"--id", "128-byte"}},
		{name: "cancel without id", args: []string{"cancel", "--at", "now"}, code: 2, want: []string{"delayctl cancel:", "--id is required"}},
		{name: "reschedule without time", args: []string{"reschedule", "--id", "x"}, code: 2, want: []string{"delayctl reschedule:", "--at or --after is required"}},
		{name: "reschedule both times", args: []string{"reschedule", "--id", "x", "--at", "now", "--after", "1s"}, code: 2, want: []string{"not both"}},
		{name: "inspect without flags", args: []string{"inspect"}, code: 2, want: []string{"--id is required"}},
		{name: "inspect extra argument", args: []string{"inspect", "x"}, code: 2, want: []string{`unexpected argument "x"`}},
		{name: "backfill reversed", args: []string{"backfill", "--from", "now", "--to", "-1h"}, code: 2,
			want: []string{"--to", "is not after --from"}},
		{name: "backfill bad from", args: []string{"backfill", "--from", "yesterday", "--to", "now"}, code: 2,
			want: []string{`"--from"`, "yesterday"}},
		{name: "backfill bad progress", args: []string{"backfill", "--from", "-1h", "--to", "now", "--progress", "fancy"}, code: 2,
			want: []string{"--progress", "fancy"}},
		{name: "backlog bad by", args: []string{"backlog", "--by", "week"}, code: 2, want: []string{"--by", "week"}},
		{name: "bad salts", args: []string{"backlog", "--salts", "0"}, code: 2, want: []string{"--salts: hbase: invalid config: Salts 0 out of range 1..256"}},
		{name: "bad segment", args: []string{"backlog", "--segment", "1500ms"}, code: 2, want: []string{"--segment, --shards: ", "segment 1.5s: want whole seconds from 1s to 24h"}},
		{name: "too many shards", args: []string{"backlog", "--shards", "70000"}, code: 2, want: []string{"shards 70000: want 1 to 65536"}},
		{name: "bad broker", args: []string{"init", "--brokers", "nohost"}, code: 2, want: []string{`--brokers: "nohost" is not host:port`}},
		{name: "unknown flag", args: []string{"submit", "--bogus"}, code: 2, want: []string{"unknown flag: --bogus"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, want: []string{"unknown command", "frobnicate"}},
		{name: "bad env", env: map[string]string{"DELAYQ_SALTS": "many"}, args: []string{"backlog"}, code: 2,
			want: []string{`DELAYQ_SALTS="many"`}},
		{name: "bad SASL mechanism", args: []string{"backlog", "--kafka-sasl", "gssapi"}, code: 2,
			want: []string{"--kafka-*", `unknown SASL mechanism "gssapi"`}},
		{name: "SASL password missing", env: map[string]string{"DELAYQ_KAFKA_SASL": "scram-sha-512", "DELAYQ_KAFKA_SASL_USER": "u"},
			args: []string{"backlog"}, code: 2, want: []string{"needs a password (DELAYQ_KAFKA_SASL_PASSWORD)"}},
		{name: "missing Kafka CA", args: []string{"backlog", "--kafka-tls-ca", "/nonexistent/ca.pem"}, code: 2,
			want: []string{"--kafka-*", "/nonexistent/ca.pem"}},
		{name: "Redis certificate without key", args: []string{"backlog", "--redis-tls-cert", "c.pem"}, code: 2,
			want: []string{"--redis", "both the certificate and the key"}},
		{name: "relative znode parent", args: []string{"backlog", "--hbase-zk-root", "hbase"}, code: 2,
			want: []string{`--hbase-zk-root: "hbase" is not a znode path`}},
		{name: "bad env time", env: map[string]string{"DELAYQ_AT": "tomorrow"}, args: []string{"cancel", "--id", "x"}, code: 2,
			want: []string{`DELAYQ_AT="tomorrow"`, "RFC 3339"}},

		{name: "kafka down", args: []string{"submit", "--brokers", down, "--timeout", "2s", "--topic", "t", "--after", "1s", "v"}, code: 1,
			want: []string{"kafka unreachable at " + down + " (--brokers)"}},
		{name: "kafka down for cancel", args: []string{"cancel", "--brokers", down, "--id", "x", "--at", "now"}, code: 1,
			want: []string{"kafka unreachable at " + down}},
		{name: "kafka down for cancel by id", args: []string{"cancel", "--brokers", down, "--id", "x"}, code: 1,
			want: []string{"kafka unreachable at " + down}},
		{name: "kafka down for reschedule", args: []string{"reschedule", "--brokers", down, "--id", "x", "--after", "1m"}, code: 1,
			want: []string{"kafka unreachable at " + down}},
		{name: "kafka down for init", args: []string{"init", "--brokers", down}, code: 1,
			want: []string{"delayctl init:", "kafka unreachable at " + down}},
		{name: "redis down", args: []string{"backlog", "--redis", down}, code: 1,
			want: []string{"redis unreachable at " + down + " (--redis)"}},
		{name: "redis down for inspect", args: []string{"inspect", "--redis", down, "--id", "x", "--at", "now"}, code: 1,
			want: []string{"redis unreachable at " + down}},
		{name: "zookeeper down", args: []string{"backfill", "--hbase-zk", down, "--from", "-1h", "--to", "now", "--dry-run"}, code: 1,
			want: []string{"hbase zookeeper unreachable at " + down + " (--hbase-zk)"}},
		{name: "env address", env: map[string]string{"DELAYQ_REDIS": down}, args: []string{"backlog"}, code: 1,
			want: []string{"redis unreachable at " + down}},
		{name: "flag beats env", env: map[string]string{"DELAYQ_REDIS": "127.0.0.1:9"}, args: []string{"backlog", "--redis", down}, code: 1,
			want: []string{"redis unreachable at " + down}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := run(t, tt.env, "", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

func TestHelpAndCompletion(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "DELAYQ_<FLAG>"},
		{[]string{"--version"}, "delayctl devel (commit "},
		{[]string{"backfill", "--help"}, "--skip-pending"},
		{[]string{"completion", "bash"}, "bash completion"},
		{[]string{"completion", "zsh"}, "compdef"},
		{[]string{"__complete", "backlog", "--by", ""}, "segment"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, code := run(t, nil, "", tt.args...)
			if code != 0 || !strings.Contains(stdout, tt.want) {
				t.Fatalf("exit %d, stdout lacks %q: %.300s (stderr %q)", code, tt.want, stdout, stderr)
			}
		})
	}
}

func TestBacklogReport(t *testing.T) {
	start := testNow.Truncate(time.Hour).Add(-time.Hour).UnixMilli() // 02:00
	seg := func(min int64, n int64) zset.SegmentCount {
		s := start + min*60_000
		return zset.SegmentCount{Segment: "x", Start: s, End: s + 60_000, Pending: n}
	}
	segs := []zset.SegmentCount{
		seg(5, 10),       // 02:05, overdue
		seg(64, 0),       // 03:04, drained: left out
		seg(65, 30),      // 03:05, not yet ended at 03:04:05? it has: 03:05 > now, pending
		seg(60*24, 5),    // next day 02:00
		seg(60*24+61, 1), // next day 03:01
	}
	r := buildBacklog("dq", time.Minute, testNow, segs)
	if r.Total != 46 || r.Overdue != 10 {
		t.Fatalf("total %d overdue %d, want 46 and 10", r.Total, r.Overdue)
	}
	var b bytes.Buffer
	r.print(&b, "hour", time.Minute, 10)
	want := `pending tasks under prefix dq: 46 (overdue: 10), now 2030-01-02T03:04:05.006Z

due (UTC hour)    pending
2030-01-02 02:00       10  ███
2030-01-02 03:00       30  ██████████
2030-01-03 02:00        5  █
2030-01-03 03:00        1  █
total                  46
`
	if b.String() != want {
		t.Errorf("by hour:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	r.print(&b, "day", time.Minute, 10)
	if !strings.Contains(b.String(), "2030-01-02          40  ██████████\n2030-01-03           6  █\n") {
		t.Errorf("by day:\n%s", b.String())
	}
	b.Reset()
	r.print(&b, "segment", time.Minute, 10)
	if !strings.Contains(b.String(), "2030-01-02 03:05") || strings.Contains(b.String(), "03:04 ") {
		t.Errorf("by segment:\n%s", b.String())
	}
	b.Reset()
	buildBacklog("dq", time.Minute, testNow, nil).print(&b, "hour", time.Minute, 10)
	if b.String() != "no pending tasks under prefix dq\n" {
		t.Errorf("empty: %q", b.String())
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, progressAuto, 1000, 2000, 0) // a buffer is not a terminal: lines
	if p.mode != progressLines {
		t.Fatalf("mode %s, want lines", p.mode)
	}
	p.start = time.Now().Add(-10 * time.Second)
	p.update(backfill.Stats{Scanned: 500, Delivered: 400, Position: 1249})
	line := b.String()
	for _, w := range []string{"25.0%", "scanned 500", "delivered 400", "50 rows/s", "eta 30s"} {
		if !strings.Contains(line, w) {
			t.Errorf("progress line %q lacks %q", line, w)
		}
	}
	b.Reset()
	p = newProgress(&b, progressBar, 1000, 2000, 0)
	p.start = time.Now().Add(-time.Second)
	p.last = time.Time{}
	p.update(backfill.Stats{Scanned: 10, Position: 1999})
	p.finish()
	if s := b.String(); !strings.HasPrefix(s, "\r\033[K[====") || !strings.Contains(s, "100.0%") || !strings.HasSuffix(s, "\r\033[K") {
		t.Errorf("bar %q", s)
	}
}

// TestKafkaLoginRefused: a broker that refuses the SASL login gives one
// line that says so and names the user, not "unreachable".
func TestKafkaLoginRefused(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "ops", "right"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	env := map[string]string{"DELAYQ_KAFKA_SASL": "scram-sha-512", "DELAYQ_KAFKA_SASL_USER": "ops", "DELAYQ_KAFKA_SASL_PASSWORD": "hunter2-bad"}
	_, stderr, code := run(t, env, "", "submit", "--brokers", c.ListenAddrs()[0], "--topic", "t", "--after", "1m", "v")
	want := `delayctl submit: kafka: SASL authentication failed for user "ops" (SCRAM-SHA-512)`
	if code != 1 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "hunter2") {
		t.Errorf("exit %d, stderr %q; want 1 and one line starting %q", code, stderr, want)
	}
}

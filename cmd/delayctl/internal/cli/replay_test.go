package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/failed"
	"github.com/delayq/delayq/payload"
)

// TestReplayErrorLines: every bad flag of replay gives one stderr line
// naming it, exit 2, nothing on stdout; an unreachable Kafka exit 1. No
// case needs a running service.
func TestReplayErrorLines(t *testing.T) {
	const down = "127.0.0.1:1"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want []string
	}{
		{name: "no range", args: []string{"replay"}, code: 2, want: []string{"delayctl replay:", "--from, --to are required"}},
		{name: "no to", args: []string{"replay", "--from", "-1h"}, code: 2, want: []string{"--to is required"}},
		{name: "reversed", args: []string{"replay", "--from", "now", "--to", "-1h"}, code: 2, want: []string{"--to", "is not after --from"}},
		{name: "empty range", args: []string{"replay", "--from", "now", "--to", "now"}, code: 2, want: []string{"is not after --from"}},
		{name: "bad from", args: []string{"replay", "--from", "yesterday", "--to", "now"}, code: 2, want: []string{`"--from"`, "yesterday", "RFC 3339"}},
		{name: "bad to", args: []string{"replay", "--from", "-1h", "--to", "later"}, code: 2, want: []string{`"--to"`, "later"}},
		{name: "negative limit", args: []string{"replay", "--from", "-1h", "--to", "now", "--limit", "-1"}, code: 2, want: []string{"--limit: -1"}},
		{name: "limit not a number", args: []string{"replay", "--from", "-1h", "--to", "now", "--limit", "ten"}, code: 2, want: []string{`"--limit"`, "ten"}},
		{name: "zero batch", args: []string{"replay", "--from", "-1h", "--to", "now", "--batch", "0"}, code: 2, want: []string{"--batch: 0"}},
		{name: "bad topic", args: []string{"replay", "--from", "-1h", "--to", "now", "--topic", "a b"}, code: 2, want: []string{"--topic", `"a b"`}},
		{name: "bad progress", args: []string{"replay", "--from", "-1h", "--to", "now", "--progress", "fancy"}, code: 2, want: []string{"--progress", "fancy"}},
		{name: "dry run takes no value", args: []string{"replay", "--from", "-1h", "--to", "now", "--dry-run=maybe"}, code: 2, want: []string{"--dry-run", "maybe"}},
		{name: "extra argument", args: []string{"replay", "--from", "-1h", "--to", "now", "x"}, code: 2, want: []string{`unexpected argument "x"`}},
		{name: "unknown flag", args: []string{"replay", "--since", "-1h"}, code: 2, want: []string{"unknown flag: --since"}},
		{name: "bad env limit", env: map[string]string{"DELAYQ_LIMIT": "ten"}, args: []string{"replay", "--from", "-1h", "--to", "now"}, code: 2,
			want: []string{`DELAYQ_LIMIT="ten"`}},
		{name: "bad env from", env: map[string]string{"DELAYQ_FROM": "yesterday"}, args: []string{"replay", "--to", "now"}, code: 2,
			want: []string{`DELAYQ_FROM="yesterday"`}},
		{name: "kafka down", args: []string{"replay", "--brokers", down, "--timeout", "2s", "--from", "-1h", "--to", "now"}, code: 1,
			want: []string{"delayctl replay:", "kafka unreachable at " + down + " (--brokers)"}},
		{name: "kafka down, dry run, range from env", env: map[string]string{"DELAYQ_FROM": "-1h", "DELAYQ_TO": "now", "DELAYQ_BROKERS": down},
			args: []string{"replay", "--dry-run", "--timeout", "2s"}, code: 1, want: []string{"kafka unreachable at " + down}},
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

func TestReplayHelp(t *testing.T) {
	stdout, stderr, code := run(t, nil, "", "replay", "--help")
	for _, w := range []string{"--reason", "--dry-run", "--limit", "delay-replay-of", "delay-input-slow"} {
		if code != 0 || !strings.Contains(stdout, w) {
			t.Errorf("exit %d, help lacks %q (stderr %q)", code, w, stderr)
		}
	}
}

func TestReplayListAndSummary(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var b bytes.Buffer
	r := failed.Record{Topic: "delay-failed", Partition: 2, Offset: 11, Time: at, Business: "orders",
		Reason: "delay-topic: \"orders\" is not allowed\nsecond line"}
	listReplay(&b, r, payload.Message{Topic: "delay-input", Headers: []payload.Header{{Key: "delay-id", Value: []byte("delay-input/3/17")}}})
	r.Dropped, r.ID, r.Business = true, "order-42", ""
	listReplay(&b, r, payload.Message{})
	want := `delay-failed/2/11  2030-01-02T03:04:05.000Z  topic=orders  id=delay-input/3/17  -> delay-input  reason: delay-topic: "orders" is not allowed; second line
delay-failed/2/11  2030-01-02T03:04:05.000Z  topic=-  id=order-42  skipped (contents dropped)  reason: delay-topic: "orders" is not allowed; second line
`
	if b.String() != want {
		t.Errorf("list:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	f := failed.Filter{From: at, To: at.Add(time.Hour), Reason: "refused", Topic: "orders", Limit: 5}
	printReplaySummary(&b, f, true, failed.Stats{Partitions: 8, Total: 40, Scanned: 30, Matched: 5, Replayed: 4, Skipped: 1}, 2*time.Second)
	for _, w := range []string{
		`replay of delay-failed, records stamped 2030-01-02T03:04:05.000Z to 2030-01-02T04:04:05.000Z, reason containing "refused", topic orders, at most 5 (dry run: nothing written)`,
		"  partitions                   8\n", "  scanned                      30\n", "  matched                      5\n",
		"  would replay                 4\n", "  skipped (contents dropped)   1\n", "  took 2s, 15 records/s\n",
	} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, b.String())
		}
	}
	b.Reset()
	printReplaySummary(&b, failed.Filter{From: at, To: at.Add(time.Hour)}, false, failed.Stats{Replayed: 3}, time.Second)
	if s := b.String(); !strings.Contains(s, "all reasons and topics\n") || !strings.Contains(s, "  replayed                     3\n") {
		t.Errorf("summary:\n%s", s)
	}
}

func TestReplayProgress(t *testing.T) {
	var b bytes.Buffer
	p := newReplayProgress(&b, progressAuto, 0) // a buffer is not a terminal: lines
	if p.mode != progressLines {
		t.Fatalf("mode %s, want lines", p.mode)
	}
	p.start = time.Now().Add(-10 * time.Second)
	p.update(failed.Stats{Total: 2000, Scanned: 500, Matched: 40, Replayed: 39, Skipped: 1})
	for _, w := range []string{"25.0%", "scanned 500 of 2000", "matched 40", "replayed 39", "skipped 1", "50 records/s", "eta 30s"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("progress line %q lacks %q", b.String(), w)
		}
	}
	b.Reset()
	p = newReplayProgress(&b, progressBar, 0)
	p.last = time.Time{}
	p.update(failed.Stats{Total: 10, Scanned: 10})
	p.finish()
	if s := b.String(); !strings.HasPrefix(s, "\r\033[K[====") || !strings.Contains(s, "100.0%") || !strings.HasSuffix(s, "\r\033[K") {
		t.Errorf("bar %q", s)
	}
	b.Reset()
	p = newReplayProgress(&b, progressNone, 0)
	p.last = time.Time{}
	p.update(failed.Stats{Total: 10, Scanned: 5})
	if b.Len() != 0 {
		t.Errorf("none printed %q", b.String())
	}
}

package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/payload/duetest"
	"github.com/delayq/delayq/topics"
)

// dueArgs are the delayctl submit arguments of a duetest case.
func dueArgs(c duetest.Case) []string {
	switch c.Field {
	case duetest.FieldAt:
		return []string{"--at", c.Value}
	case duetest.FieldAfter:
		return []string{"--after", c.Value}
	case duetest.FieldEvery:
		return []string{"--after", "1m", "--every", c.Value, "--count", "3"}
	case duetest.FieldUntil:
		return []string{"--after", "1m", "--every", "1h", "--until", c.Value}
	case duetest.FieldExpireAfter:
		return []string{"--after", "1m", "-H", "delay-expire-after=" + c.Value}
	}
	return nil
}

// TestDueTable: delayctl submit's verdicts on the table every front door
// shares (payload/duetest), against an in-process Kafka: a case accepted
// is written (exit 0), a refused one is a usage error (exit 2) with the
// reason, before anything is written.
func TestDueTable(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics.Input, topics.Slow))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	broker := cluster.ListenAddrs()[0]
	for _, c := range duetest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			args := append([]string{"submit", "--brokers", broker, "--topic", "orders"}, dueArgs(c)...)
			args = append(args, "v")
			var out, errOut bytes.Buffer
			code := Main(t.Context(), args, IO{
				Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
				Getenv: func(string) string { return "" }, Now: time.Now,
			})
			switch {
			case c.Reason == "" && code != ExitOK:
				t.Fatalf("delayctl %s: exit %d, %q", strings.Join(args, " "), code, errOut.String())
			case c.Reason != "" && (code != ExitUsage || !strings.Contains(errOut.String(), c.Reason)):
				t.Fatalf("delayctl %s: exit %d, %q; want 2 saying %q", strings.Join(args, " "), code, errOut.String(), c.Reason)
			case c.Reason != "" && out.Len() != 0:
				t.Fatalf("refused, but printed %q", out.String())
			}
		})
	}
}

// TestMaxDelayFlag: --max-delay (DELAYQ_MAX_DELAY, delayd's variable)
// moves delayctl's limit with delayd's; the reasons name the flags.
func TestMaxDelayFlag(t *testing.T) {
	const down = "127.0.0.1:1" // an accepted request gets as far as Kafka
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"after 2099h", nil, []string{"submit", "--topic", "t", "--after", "2099h", "v"}, 2, "--after: 2099h0m0s is over the maximum delay 720h0m0s"},
		{"after 2099h under a longer max delay", nil, []string{"submit", "--brokers", down, "--max-delay", "2100h", "--topic", "t", "--after", "2099h", "v"}, 1, "kafka unreachable"},
		{"max delay from the environment", map[string]string{"DELAYQ_MAX_DELAY": "90d"}, []string{"submit", "--brokers", down, "--topic", "t", "--after", "2099h", "v"}, 1, "kafka unreachable"},
		{"a shorter max delay", map[string]string{"DELAYQ_MAX_DELAY": "1h"}, []string{"submit", "--topic", "t", "--after", "2h", "v"}, 2, "--after: 2h0m0s is over the maximum delay 1h0m0s"},
		{"at beyond it", nil, []string{"submit", "--topic", "t", "--at", "+31d", "v"}, 2, "--at: due "},
		{"every beyond it", nil, []string{"submit", "--topic", "t", "--after", "1m", "--every", "31d", "v"}, 2, "--every: 744h0m0s is over the maximum delay"},
		{"reschedule beyond it", nil, []string{"reschedule", "--id", "x", "--after", "2099h"}, 2, "--after: 2099h0m0s is over the maximum delay"},
		{"reschedule to unix seconds", nil, []string{"reschedule", "--id", "x", "--at", "1795829478"}, 2,
			"--at: 1795829478 looks like unix seconds; --at is unix milliseconds (1795829478000)"},
		{"cancel at unix seconds", nil, []string{"cancel", "--id", "x", "--at", "1795829478"}, 2, "looks like unix seconds"},
		{"submit at unix seconds", nil, []string{"submit", "--topic", "t", "--at", "1795829478", "v"}, 2, "looks like unix seconds"},
		{"replace at unix seconds", nil, []string{"replace", "--id", "x", "--topic", "t", "--at", "1795829478", "v"}, 2, "looks like unix seconds"},
		{"until in unix seconds", nil, []string{"submit", "--topic", "t", "--after", "1m", "--every", "1h", "--until", "1795829478", "v"}, 2, "--until: 1795829478 looks like unix seconds"},
		{"bad max delay", nil, []string{"submit", "--max-delay", "long", "--topic", "t", "--after", "1m", "v"}, 2, `--max-delay: "long" is not a Go duration`},
		{"list from unix seconds is a range, not a due time", nil, []string{"list", "--api", "http://" + down, "--from", "1795829478"}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, tc.env, "", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, %q; want %d saying %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}

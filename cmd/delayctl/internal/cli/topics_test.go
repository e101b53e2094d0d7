package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// pause, resume, rate, expire-after and topics write and read the topic
// controls in Redis (package topicctl); a name that is no business topic
// and a bad number are usage errors.
func TestTopicCommands(t *testing.T) {
	mr := miniredis.RunT(t)
	r := []string{"--redis", mr.Addr()}
	for _, args := range [][]string{
		{"pause", "orders"}, {"rate", "mail", "500"}, {"expire-after", "mail", "10m"},
	} {
		if _, stderr, code := run(t, nil, "", append(args, r...)...); code != ExitOK {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
	}
	stdout, _, code := run(t, nil, "", append([]string{"topics"}, r...)...)
	for _, want := range []string{"orders  paused", "mail    limited  500     10m0s"} {
		if code != ExitOK || !strings.Contains(stdout, want) {
			t.Errorf("topics: exit %d, output %q lacks %q", code, stdout, want)
		}
	}
	// --json: expire_after is a Go duration when set and absent when not,
	// never the table's "-".
	stdout, _, code = run(t, nil, "", append([]string{"topics", "--json"}, r...)...)
	var got struct {
		Topics []map[string]any `json:"topics"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != ExitOK || err != nil {
		t.Fatalf("topics --json: exit %d, %v: %q", code, err, stdout)
	}
	for _, tp := range got.Topics {
		exp, has := tp["expire_after"]
		switch tp["topic"] {
		case "mail":
			if exp != "10m0s" {
				t.Errorf("topics --json: mail's expire_after = %v, want \"10m0s\"", exp)
			}
		case "orders":
			if has {
				t.Errorf("topics --json: orders has no default expiry, yet expire_after = %v", exp)
			}
		}
	}
	if stdout, _, _ = run(t, nil, "", append([]string{"pause", "--all"}, r...)...); !strings.Contains(stdout, "ALL TOPICS PAUSED") {
		t.Errorf("pause --all: %q", stdout)
	}
	if stdout, _, _ = run(t, nil, "", append([]string{"resume", "--all"}, r...)...); strings.Contains(stdout, "paused") {
		t.Errorf("resume --all: %q", stdout)
	}
	for _, args := range [][]string{
		{"pause"}, {"pause", "orders", "--all"}, {"pause", "delay-scan"}, {"rate", "mail", "-3"},
		{"rate", "mail"}, {"expire-after", "mail", "soon"},
	} {
		if _, stderr, code := run(t, nil, "", append(args, r...)...); code != ExitUsage {
			t.Errorf("%v: exit %d, %q; want a usage error", args, code, stderr)
		}
	}
}

package prometheus

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// promtool finds Debian's promtool; missing, it fails under CI=true and
// skips otherwise, naming the script that installs it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("promtool is not installed (CI=true, this test never skips): deploy/local/tools installs Debian's prometheus")
	}
	t.Skip("promtool is not installed: run deploy/local/tools (make test does)")
	return ""
}

// TestPromtool checks the scrape config and the rules, and runs the rules'
// unit tests: every alert fires on what should fire it and stays quiet on
// a healthy delayd.
func TestPromtool(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "rules/delayq.rules.yml"},
		{"test", "rules", "rules/delayq.rules.test.yml"},
	} {
		t.Run(strings.Join(args[:2], "_"), func(t *testing.T) {
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			if !strings.Contains(string(out), "SUCCESS") {
				t.Fatalf("promtool %s said no SUCCESS:\n%s", strings.Join(args, " "), out)
			}
		})
	}
}

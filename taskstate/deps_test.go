package taskstate

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoClientDeps: the rules import no Kafka, Redis or HBase client, so
// that they can be read and tested without any of them.
func TestNoClientDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/delayq/delayq/taskstate" {
			continue
		}
		for _, client := range []string{"segmentio/kafka-go", "redis/go-redis", "tsuna/gohbase", "github.com/delayq/delayq/"} {
			if strings.Contains(dep, client) {
				t.Errorf("taskstate imports %s", dep)
			}
		}
	}
}

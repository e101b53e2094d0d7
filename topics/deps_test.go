package topics

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeaf: topics imports the standard library only, so that payload and
// the other domain packages may name topics without importing a client.
func TestLeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/delayq/delayq/topics" {
			t.Errorf("topics imports %s", dep)
		}
	}
}

package topics

import (
	"testing"

	"github.com/delayq/delayq/internal/puretest"
)

// TestLeaf: topics imports the standard library only, so that payload and
// the other domain packages may name topics without importing a client.
func TestLeaf(t *testing.T) {
	puretest.Deps(t)
}

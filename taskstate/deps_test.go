package taskstate

import (
	"testing"

	"github.com/delayq/delayq/internal/puretest"
)

// TestNoClientDeps: the rules depend on the standard library only (no
// Kafka, Redis or HBase client, no other delayq package), so that they
// can be read and tested without any of them.
func TestNoClientDeps(t *testing.T) {
	puretest.Deps(t)
}

package tenant

import (
	"testing"

	"github.com/delayq/delayq/internal/puretest"
)

// TestPure: the rules import only the standard library without its I/O
// (no Kafka, Redis or HBase client, no os, net, database, syscall,
// randomness) and topics, a leaf of names; they never read the clock,
// sleep or start a goroutine, so that they can be read and tested alone.
// (crypto/sha256 and fmt themselves depend on os; the rules do not call
// it.)
func TestPure(t *testing.T) {
	puretest.Imports(t, puretest.NoIO)
	puretest.Deps(t, "github.com/delayq/delayq/topics")
	puretest.Source(t)
}

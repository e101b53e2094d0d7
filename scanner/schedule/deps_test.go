package schedule

import (
	"testing"

	"github.com/delayq/delayq/internal/puretest"
)

// TestPure: the rules import nothing but time (no Kafka, Redis or HBase
// client, no delayq package, no I/O), never read the clock, sleep or
// start a goroutine, so that they can be read and tested alone.
func TestPure(t *testing.T) {
	puretest.Imports(t, func(imp string) bool { return imp == "time" })
	puretest.Deps(t)
	puretest.Source(t)
}

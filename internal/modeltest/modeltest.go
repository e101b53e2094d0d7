package modeltest

import (
	"flag"
	"testing"
	"time"
)

var first = flag.Uint64("model.seed", 0, "first seed of the model tests (0: from the clock)")

// Run runs n cases of a model test with the seeds first, first+1, …, where
// first is -model.seed or, when that is 0, taken from the clock (and
// logged). A case returns what it found broken; the first failing case
// fails t with its seed and how to replay it.
func Run(t testing.TB, n int, run func(seed uint64) error) {
	t.Helper()
	base := *first
	if base == 0 {
		base = uint64(time.Now().UnixNano())
	}
	t.Logf("first seed %d", base)
	for i := range uint64(n) {
		if err := run(base + i); err != nil {
			t.Fatalf("seed %d (replay it first: go test -run '^%s$' -model.seed %d): %v", base+i, t.Name(), base+i, err)
		}
	}
}

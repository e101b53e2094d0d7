package puretest

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that keeps what a check reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestChecksCatch: run on this package, which imports os/exec and
// go/parser and depends on nothing outside the standard library, the
// checks report exactly what they must.
func TestChecksCatch(t *testing.T) {
	r := &recorder{TB: t}
	Imports(r, NoIO)
	if len(r.errs) != 1 || r.errs[0] != "imports os/exec" {
		t.Errorf("Imports(NoIO) reported %q, want only os/exec", r.errs)
	}
	r.errs = nil
	Imports(r, func(string) bool { return true })
	Deps(r)
	Source(r)
	if len(r.errs) != 0 {
		t.Errorf("a pure package's checks reported %q", r.errs)
	}
	for _, c := range []struct {
		path string
		want bool
	}{{"time", true}, {"encoding/json", true}, {"io", true}, {"io/fs", false}, {"os", false}, {"net/http", false}, {"math/rand/v2", false}, {"crypto/sha256", true}} {
		if NoIO(c.path) != c.want {
			t.Errorf("NoIO(%q) = %v, want %v", c.path, !c.want, c.want)
		}
	}
}

// TestSourceCatches: a file that starts a goroutine and reads the clock
// is reported twice.
func TestSourceCatches(t *testing.T) {
	t.Chdir("testdata/impure")
	r := &recorder{TB: t}
	Source(r)
	if len(r.errs) != 2 {
		t.Fatalf("Source reported %q, want the goroutine and time.Now", r.errs)
	}
}

package modeltest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Run reports.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Name() string        { return "TestX" }
func (r *recorder) Fatalf(f string, a ...any) {
	r.fatal = strings.TrimSpace(fmt.Sprintf(f, a...))
	panic(r)
}

// TestRunNamesTheSeed: the seeds run in order from -model.seed, and the
// first failing one is named with its replay command; none after it runs.
func TestRunNamesTheSeed(t *testing.T) {
	*first = 40
	defer func() { *first = 0 }()
	var seen []uint64
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != any(r) {
				panic(p)
			}
		}()
		Run(r, 10, func(seed uint64) error {
			seen = append(seen, seed)
			if seed == 42 {
				return errors.New("broken")
			}
			return nil
		})
	}()
	if len(seen) != 3 || seen[0] != 40 || seen[2] != 42 {
		t.Errorf("ran seeds %v, want 40, 41, 42", seen)
	}
	if want := "seed 42 (replay it first: go test -run '^TestX$' -model.seed 42): broken"; r.fatal != want {
		t.Errorf("reported %q, want %q", r.fatal, want)
	}
}

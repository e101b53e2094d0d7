package taskstate

import (
	"go/ast"
	"testing"

	"github.com/delayq/delayq/internal/puretest"
)

// TestFunctionLength: no function of the rules or of their executors
// (ingest, scanner) is over 80 lines; `make lint` checks their cognitive
// complexity (gocognit -over 30).
func TestFunctionLength(t *testing.T) {
	const limit = 80
	for _, dir := range []string{".", "../ingest", "../scanner"} {
		fset, files := puretest.Files(t, dir)
		for _, f := range files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > limit {
					t.Errorf("%s: %s is %d lines, over %d", fset.Position(fn.Pos()).Filename, fn.Name.Name, n, limit)
				}
			}
		}
	}
}

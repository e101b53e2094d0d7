package taskstate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestFunctionLength: no function of the rules or of their executors
// (ingest, scanner) is over 80 lines; `make lint` checks their cognitive
// complexity (gocognit -over 30).
func TestFunctionLength(t *testing.T) {
	const limit = 80
	for _, dir := range []string{".", "../ingest", "../scanner"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > limit {
					t.Errorf("%s: %s is %d lines, over %d", name, fn.Name.Name, n, limit)
				}
			}
		}
	}
}

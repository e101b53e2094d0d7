package puretest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Deps fails t for every package the package under test depends on
// (`go list -deps`) outside the standard library, other than itself and
// allowed: no Kafka, Redis or HBase client, and no delayq package that
// was not named.
func Deps(t testing.TB, allowed ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	self := strings.TrimSpace(string(out))
	out, err = exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	ok := map[string]bool{self: true}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, dep := range strings.Fields(string(out)) {
		if !ok[dep] {
			t.Errorf("%s depends on %s, outside the standard library", self, dep)
		}
	}
}

// Imports fails t for every direct import of the package under test that
// allow refuses.
func Imports(t testing.TB, allow func(path string) bool) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if !allow(imp) {
			t.Errorf("imports %s", imp)
		}
	}
}

// NoIO reports whether path is a standard package that does no I/O and
// draws no randomness: not net, os, io/fs, io/ioutil, database, log,
// syscall, unsafe, math/rand or crypto/rand (or below them).
func NoIO(path string) bool {
	for _, io := range []string{"net", "os", "io/fs", "io/ioutil", "database", "log", "syscall", "unsafe", "math/rand", "crypto/rand"} {
		if path == io || strings.HasPrefix(path, io+"/") {
			return false
		}
	}
	return true
}

// clock are the functions of package time that read the clock or wait.
var clock = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}

// Source fails t for every goroutine started and every clock read or wait
// (time.Now, Sleep, timers, …) in the non-test Go files of the package
// under test: the clock is the rules' input, never read by them.
func Source(t testing.TB) {
	t.Helper()
	fset, files := Files(t, ".")
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: starts a goroutine", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && clock[n.Sel.Name] {
					t.Errorf("%s: reads the clock or waits (time.%s)", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
}

// Files parses the non-test Go files of dir, failing t when there are none
// or one does not parse.
func Files(t testing.TB, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return fset, files
}

package tenant

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPure: the rules import only the standard library and none of its
// I/O (no Kafka, Redis or HBase client, no delayq package, no os, net,
// database, syscall, randomness), never read the clock, sleep or start a
// goroutine, so that they can be read and tested alone. (crypto/sha256
// and fmt themselves depend on os; the rules do not call it.)
func TestPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(imp, "/")
		bad := strings.Contains(first, ".") || imp == "syscall" || imp == "unsafe" || strings.HasPrefix(imp, "math/rand") || imp == "crypto/rand"
		for _, io := range []string{"net", "os", "io/fs", "io/ioutil", "database", "log"} {
			bad = bad || imp == io || strings.HasPrefix(imp, io+"/")
		}
		if bad {
			t.Errorf("tenant imports %s", imp)
		}
	}
	out, err = exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if first, _, _ := strings.Cut(dep, "/"); dep != "github.com/delayq/delayq/tenant" && strings.Contains(first, ".") {
			t.Errorf("tenant depends on %s, outside the standard library", dep)
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	clock := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
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

package docs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/delayq/delayq"

// goList runs `go list` in the module's root with args and returns its
// output lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Fields(string(out))
}

// packages returns the module's packages as paths relative to its root
// ("." for the root package).
func packages(t *testing.T) []string {
	var rel []string
	for _, p := range goList(t, "./...") {
		r := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if r == "" {
			r = "."
		}
		rel = append(rel, r)
	}
	return rel
}

var (
	codeSpan    = regexp.MustCompile("`([^`]+)`")
	parenthesis = regexp.MustCompile(`\([^)]*\)`)
)

// tableNames returns the package paths named in the first cell of each row
// of the first Markdown table after heading in file, outside parentheses.
// A name "…/x" is the first name of the same cell joined with x
// (`kafka/committed`, `…/txntest`).
func tableNames(t *testing.T, file, heading string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, row := range tableRows(t, file, heading) {
		cell := strings.SplitN(strings.TrimPrefix(row.text, "|"), "|", 2)[0]
		cell = parenthesis.ReplaceAllString(cell, "")
		first := ""
		for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
			name := m[1]
			if rest, ok := strings.CutPrefix(name, "…/"); ok {
				name = first + "/" + rest
			} else if first == "" {
				first = name
			}
			names[name] = true
		}
	}
	return names
}

// tableRow is a line of a Markdown table and its line number (from 1).
type tableRow struct {
	line int
	text string
}

// tableRows returns the lines of the first Markdown table after heading
// in file, header and separator rows included; none is a failure.
func tableRows(t *testing.T, file, heading string) []tableRow {
	t.Helper()
	lines, err := readLines(file)
	if err != nil {
		t.Fatal(err)
	}
	var rows []tableRow
	in := false
	for i, line := range lines {
		switch {
		case line == heading:
			in = true
		case !in:
		case strings.HasPrefix(line, "|"):
			rows = append(rows, tableRow{i + 1, line})
		case len(rows) > 0:
			return rows
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table under %q", file, heading)
	}
	return rows
}

// TestPackageMap: ARCHITECTURE's package map names every package of the
// module, and names none that is gone.
func TestPackageMap(t *testing.T) {
	pkgs := packages(t)
	named := tableNames(t, "ARCHITECTURE.md", "## Package map")
	for _, p := range pkgs {
		if !named[p] {
			t.Errorf("docs/ARCHITECTURE.md, Package map: package %s has no row", p)
		}
	}
	for n := range named {
		if !slices.Contains(pkgs, n) {
			t.Errorf("docs/ARCHITECTURE.md, Package map: %s is not a package of the module", n)
		}
	}
}

// readmeFolders are the folders whose README row stands for every package
// under them: tests, tools, the stack, mains and shared helpers.
var readmeFolders = []string{"cmd/", "deploy/", "docs", "e2e/", "internal/", "tools/"}

// TestReadmeLayout: README's layout table names every package outside
// readmeFolders (payload/find as well as payload), and none that is gone.
func TestReadmeLayout(t *testing.T) {
	pkgs := packages(t)
	named := tableNames(t, "../README.md", "## Layout")
	for _, p := range pkgs {
		covered := false
		for _, f := range readmeFolders {
			covered = covered || strings.HasPrefix(p, f)
		}
		if !covered && !named[p] {
			t.Errorf("README.md, Layout: package %s has no row", p)
		}
	}
	for n := range named {
		if !slices.Contains(pkgs, n) && !slices.Contains(readmeFolders, n+"/") && n != "docs" {
			t.Errorf("README.md, Layout: %s is not a package or folder of the module", n)
		}
	}
}

// TestClientDependencies: what README says the Go client (package delayq)
// depends on is what `go list -deps` finds: the in-module packages and
// the modules it imports itself (not their own dependencies), each named
// in the client's row of the layout table.
func TestClientDependencies(t *testing.T) {
	row := ""
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `.` (package `delayq`)") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("README.md: no layout row for the client (| `.` (package `delayq`) | …)")
	}
	_, claim, _ := strings.Cut(row, "depends on")
	claimed := map[string]bool{}
	for _, m := range codeSpan.FindAllStringSubmatch(claim, -1) {
		claimed[m[1]] = true
	}

	// Every package the client builds on, and the imports of those in the
	// module: the modules outside it that delayq itself chose.
	want := map[string]bool{}
	for _, line := range goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}|{{join .Imports \",\"}}{{end}}", ".") {
		path, imports, _ := strings.Cut(line, "|")
		if path != module && !strings.HasPrefix(path, module+"/") {
			continue
		}
		if rel := strings.TrimPrefix(path, module+"/"); path != module && !strings.Contains(rel, "internal/") {
			want[rel] = true
		}
		for _, imp := range strings.Split(imports, ",") {
			if imp != "" && !strings.HasPrefix(imp, module) && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				want[modulePath(imp)] = true
			}
		}
	}
	for w := range want {
		if !claimed[w] {
			t.Errorf("README.md: the client depends on %s, which its layout row does not name", w)
		}
	}
	for c := range claimed {
		if !want[c] {
			t.Errorf("README.md: the client's layout row names %s, which it does not depend on", c)
		}
	}
}

// modulePath trims an import path to its module (github.com/a/b/c → github.com/a/b).
func modulePath(imp string) string {
	parts := strings.Split(imp, "/")
	if len(parts) > 3 && parts[0] == "github.com" {
		parts = parts[:3]
	}
	return strings.Join(parts, "/")
}

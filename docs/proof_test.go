package docs

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The proof table: ARCHITECTURE.md's "## Guarantees" table names, for
// each guarantee, the tests that prove it, as `package` followed by test
// names ("`scanner` TestWorkFenced, TestDeliversDue; `zset` TestModel").
// TestProofTable holds it to three rules:
//
//  1. every test it names exists: a func TestX/FuzzX/BenchmarkX in a
//     _test.go file of that package, or a subtest name (a string literal
//     "X" in the package, as payloadtest's conformance cases); a package
//     named without test names stands for all its tests;
//  2. every row names at least one test that `make test` runs: in a
//     package its `go test` command covers, not behind a build tag (such
//     as `soak`), not skipped unless a variable another Makefile target
//     sets (DELAYQ_NETFAULT_ALL=1 of `make faults`) is set;
//  3. a named test that `make test` does not run is marked in its row
//     with what runs it (`make faults`, `make soak`, the tag or the
//     variable; `-bench` for a benchmark), so that a reader knows the
//     row's command is not part of the suite;
//  4. every alternative of a -run (-bench) pattern in the row's go test
//     commands matches a test (benchmark) of the packages the command
//     names, so that the command runs what the row claims.
const proofRule = "every test a row names must exist, every row must name at least one test `make test` runs " +
	"(covered by its go test command, not behind a build tag such as soak, not skipped unless a variable of " +
	"`make faults`/`make soak` is set), a test only `make faults`/`make soak` runs must be marked so in its row, " +
	"and each -run alternative of its commands must match a test of the command's packages"

// TestProofTable checks ARCHITECTURE's proof table against the tests that
// exist and the Makefile (see proofRule).
func TestProofTable(t *testing.T) {
	rows := proofRows(t, "ARCHITECTURE.md", "## Guarantees")
	if len(rows) < 20 {
		t.Fatalf("ARCHITECTURE.md, Guarantees: found %d rows, expected at least 20: is the table parser still finding them?", len(rows))
	}
	mk, err := readMakefile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	idx := newTestIndex("..", mk)
	named := 0
	for _, row := range rows {
		for _, p := range checkProofRow(row, idx) {
			t.Errorf("ARCHITECTURE.md:%d (%s): %s\n\trule: %s", row.line, row.short(), p, proofRule)
		}
		named += len(row.proofs)
	}
	t.Logf("checked %d rows naming %d tests", len(rows), named)
}

// TestProofTableCatches runs the row checker on a module of its own: a
// missing test, a test behind a build tag, a test skipped unless a
// `make faults` variable is set, a package `make test` does not cover,
// and a row with no test `make test` runs are each reported; a marked
// test and a test exempted by its package's list are not.
func TestProofTableCatches(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("Makefile", "test:\n\t$(GO) test -race ./a/... ./b\nfaults:\n\tDELAYQ_ALL=1 $(GO) test ./a/... ./c\nsoak:\n\t$(GO) test -tags soak ./b\n")
	write("a/a_test.go", `package a

import (
	"os"
	"testing"
)

var inMakeTest = map[string]bool{"TestListed": true}

func gate(t *testing.T) {
	if !inMakeTest[t.Name()] && os.Getenv("DELAYQ_ALL") != "1" {
		t.Skip("make faults")
	}
}

func TestPlain(t *testing.T)   {}
func TestListed(t *testing.T)  { gate(t) }
func TestGated(t *testing.T)   { gate(t) }
func TestSubtests(t *testing.T) { t.Run("CaseOne", func(*testing.T) {}) }

func BenchmarkThing(b *testing.B) {}
`)
	write("b/b_test.go", "//go:build soak\n\npackage b\n\nimport \"testing\"\n\nfunc TestSoak(t *testing.T) {}\n")
	write("b/c_test.go", "package b\n\nimport \"testing\"\n\nfunc TestShape(t *testing.T) {}\n")
	write("c/c_test.go", "package c\n\nimport \"testing\"\n\nfunc TestFar(t *testing.T) {}\n")
	mk, err := readMakefile(filepath.Join(dir, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	idx := newTestIndex(dir, mk)
	for _, c := range []struct {
		name, cell, command string
		want                []string // substrings, one problem each, in order
	}{
		{"ok", "`a` TestPlain, TestListed, CaseOne; `b` TestShape", "", nil},
		{"missing test", "`a` TestPlain, TestGone", "", []string{"a TestGone: no such test"}},
		{"missing subtest", "`a` TestPlain, CaseTwo", "", []string{"a CaseTwo: no such test"}},
		{"missing package", "`a` TestPlain; `z` TestZ", "", []string{"z TestZ: no such package"}},
		{"gated, unmarked", "`a` TestPlain, TestGated", "", []string{"a TestGated: skipped unless DELAYQ_ALL"}},
		{"gated, marked", "`a` TestPlain, TestGated (`make faults`)", "", nil},
		{"gated, marked in the command", "`a` TestPlain, TestGated", "`DELAYQ_ALL=1 go test ./a`", nil},
		{"tagged, unmarked", "`b` TestShape, TestSoak", "", []string{"b TestSoak: behind build tag soak"}},
		{"tagged, marked", "`b` TestShape, TestSoak (build tag `soak`)", "`make soak`", nil},
		{"package not covered", "`a` TestPlain; `c` TestFar", "", []string{"c TestFar: make test's go test does not cover package c"}},
		{"package not covered, marked", "`a` TestPlain; `c` TestFar", "`make faults`", nil},
		{"nothing in make test", "`b` TestSoak (`make soak`)", "", []string{"names no test that make test runs"}},
		{"no test at all", "every test of the world", "", []string{"names no test"}},
		{"benchmark, unmarked", "`a` TestPlain, BenchmarkThing", "", []string{"a BenchmarkThing: a benchmark"}},
		{"benchmark, marked", "`a` TestPlain, BenchmarkThing", "`go test -run XXX -bench Thing ./a`", nil},
		{"command runs them", "`a` TestPlain, TestListed", "`go test -run 'Plain\\|TestListed' ./a`; `go test -run 'TestSubtests/CaseOne' ./a`", nil},
		{"command runs nothing", "`a` TestPlain", "`go test -run 'Plain\\|Gone' ./a ./b`", []string{`alternative "Gone" matches no test of a b`}},
		{"bench command runs nothing", "`a` TestPlain, BenchmarkThing (-bench)", "`go test -run XXX -bench Other ./a`", []string{`-bench alternative "Other" matches no benchmark`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := parseProofRow(1, "a guarantee", c.cell, c.command, func(p string) bool {
				return p == "a" || p == "b" || p == "c" || p == "z"
			})
			got := checkProofRow(row, idx)
			if len(got) != len(c.want) {
				t.Fatalf("problems %q, want one each for %q", got, c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to name %q", i, got[i], w)
				}
			}
		})
	}
}

// proofRow is one row of the proof table.
type proofRow struct {
	line      int
	guarantee string
	text      string   // the tests and command cells, where marks are looked for
	proofs    []proof  // in the order named
	commands  []string // the go test commands of the command cell
}

func (r proofRow) short() string {
	s := r.guarantee
	if len(s) > 60 {
		s = s[:57] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// proof is a test a row names, or a package named without test names
// (all its tests).
type proof struct {
	pkg, name string // name "" for the whole package
}

func (p proof) String() string {
	if p.name == "" {
		return p.pkg
	}
	return p.pkg + " " + p.name
}

var (
	testFuncRE = regexp.MustCompile(`^(Test|Fuzz|Benchmark|Example)[A-Z0-9_]`)
	// subtestRE: a CamelCase name of two capitals or more and a lower-case
	// letter (IDRows, CancelBeforePut; not FLUSHALL, not Redis).
	subtestRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*[A-Z][A-Za-z0-9_]*$`)
	wordRE    = regexp.MustCompile("`[^`]*`|[()]|[A-Za-z_][A-Za-z0-9_]*")
)

// proofRows returns the rows of the first table after heading in file.
func proofRows(t *testing.T, file, heading string) []proofRow {
	t.Helper()
	isPkg := func(p string) bool {
		if p == "." {
			return true
		}
		if strings.ContainsAny(p, " *=$") {
			return false
		}
		m, _ := filepath.Glob(filepath.Join("..", p, "*.go"))
		return len(m) > 0
	}
	var rows []proofRow
	for _, row := range tableRows(t, file, heading) {
		cells := splitRow(row.text)
		if len(cells) < 3 || strings.Trim(cells[0], "-: ") == "" || cells[0] == "guarantee" {
			continue
		}
		rows = append(rows, parseProofRow(row.line, cells[0], cells[1], cells[2], isPkg))
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table under %q", file, heading)
	}
	return rows
}

// splitRow splits a Markdown table row at its unescaped pipes.
func splitRow(line string) []string {
	var cells []string
	var b strings.Builder
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// parseProofRow reads the tests cell: a code span that isPkg names the
// package of the test names after it, and a package named with no test
// name stands for all its tests; inside parentheses the package may
// change for their length, and only Test/Fuzz/Benchmark names count there
// (the rest is prose); outside them a CamelCase name is a subtest.
func parseProofRow(line int, guarantee, tests, command string, isPkg func(string) bool) proofRow {
	row := proofRow{line: line, guarantee: guarantee, text: tests + " " + command}
	for _, m := range codeSpan.FindAllStringSubmatch(command, -1) {
		if strings.Contains(m[1], "go test") {
			row.commands = append(row.commands, m[1])
		}
	}
	pkg := ""
	type outer struct{ pkg, pending string }
	var stack []outer // the state before each open parenthesis
	named := map[string]bool{}
	add := func(name string) {
		if pkg == "" {
			return
		}
		p := proof{pkg, name}
		if !named[p.String()] {
			named[p.String()] = true
			row.proofs = append(row.proofs, p)
		}
	}
	pending := "" // a package named with no test after it yet
	flush := func() {
		if pending != "" {
			p := proof{pkg: pending}
			if !named[p.String()] {
				named[p.String()] = true
				row.proofs = append(row.proofs, p)
			}
			pending = ""
		}
	}
	for _, w := range wordRE.FindAllString(tests, -1) {
		switch {
		case w == "(":
			stack = append(stack, outer{pkg, pending})
			pending = ""
		case w == ")":
			// A package named in parentheses without a test is prose.
			if len(stack) > 0 {
				o := stack[len(stack)-1]
				pkg, pending, stack = o.pkg, o.pending, stack[:len(stack)-1]
			}
		case strings.HasPrefix(w, "`"):
			if name := strings.Trim(w, "`"); isPkg(name) {
				flush()
				pkg, pending = name, name
			}
		case testFuncRE.MatchString(w):
			pending = ""
			add(w)
		case len(stack) == 0 && subtestRE.MatchString(w) && strings.ToUpper(w) != w:
			pending = ""
			add(w)
		}
	}
	flush()
	return row
}

// checkProofRow applies proofRule to one row and returns its problems.
func checkProofRow(row proofRow, idx *testIndex) []string {
	var problems []string
	if len(row.proofs) == 0 {
		return []string{"names no test: name one as `package` TestName"}
	}
	inMakeTest := 0
	for _, p := range row.proofs {
		st, err := idx.status(p)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		if st.runs {
			inMakeTest++
			continue
		}
		if st.subtest {
			continue
		}
		if !st.markedIn(row.text) {
			problems = append(problems, fmt.Sprintf("%s: %s, so make test does not run it: mark it in the row with %s, or name a test make test runs",
				p, st.why, strings.Join(st.marks, " or ")))
		}
	}
	if inMakeTest == 0 {
		problems = append(problems, "names no test that make test runs")
	}
	for _, c := range row.commands {
		problems = append(problems, checkCommand(c, idx)...)
	}
	return problems
}

// runFlagRE finds the -run and -bench patterns of a go test command.
var runFlagRE = regexp.MustCompile(`-(run|bench)[ =]('[^']*'|"[^"]*"|\S+)`)

// checkCommand reports each alternative of a command's -run (or -bench)
// pattern that matches no test (benchmark) of the packages it names: a
// command that would run nothing of what its row claims.
func checkCommand(cmd string, idx *testIndex) []string {
	var pkgs []string
	for _, f := range strings.Fields(cmd) {
		if (strings.HasPrefix(f, "./") || f == ".") && !strings.HasSuffix(f, "...") {
			pkgs = append(pkgs, strings.TrimPrefix(strings.TrimPrefix(f, "./"), "/"))
		}
	}
	flags := map[string]string{}
	for _, m := range runFlagRE.FindAllStringSubmatch(cmd, -1) {
		flags[m[1]] = strings.Trim(m[2], `'"`)
	}
	kind, pattern := "run", flags["run"]
	if b, ok := flags["bench"]; ok {
		kind, pattern = "bench", b
	}
	if pattern == "" || len(pkgs) == 0 {
		return nil
	}
	var names []string
	for _, p := range pkgs {
		if p == "" {
			p = "."
		}
		pt, err := idx.load(p)
		if err != nil {
			return []string{fmt.Sprintf("command %s: package %s: %v", cmd, p, err)}
		}
		for n := range pt.tests {
			if (kind == "bench") == strings.HasPrefix(n, "Benchmark") {
				names = append(names, n)
			}
		}
	}
	var problems []string
	top, _, _ := strings.Cut(strings.ReplaceAll(pattern, `\|`, "|"), "/")
	for _, alt := range strings.Split(top, "|") {
		re, err := regexp.Compile(alt)
		if err != nil {
			problems = append(problems, fmt.Sprintf("command %s: -%s %q: %v", cmd, kind, alt, err))
			continue
		}
		if !slices.ContainsFunc(names, re.MatchString) {
			problems = append(problems, fmt.Sprintf("command %s: -%s alternative %q matches no %s of %s", cmd, kind, alt, map[string]string{"run": "test", "bench": "benchmark"}[kind], strings.Join(pkgs, " ")))
		}
	}
	return problems
}

// testStatus says whether make test runs a test, and if not why and
// which words in its row would mark it.
type testStatus struct {
	runs    bool
	subtest bool // a subtest: neither counts nor needs a mark (the row's other names say what runs it)
	why     string
	marks   []string
}

func (s testStatus) markedIn(text string) bool {
	for _, m := range s.marks {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

// makefile is what the check needs of the Makefile: the package patterns
// of make test's go test command, its -skip pattern and whether it is
// -short, and for each other target the variables it sets and the tags
// and packages of its go test.
type makefile struct {
	testPatterns []string
	testSkip     *regexp.Regexp
	testShort    bool
	targets      map[string]makeTarget
}

type makeTarget struct {
	vars     []string
	tags     []string
	patterns []string
}

var (
	ruleRE    = regexp.MustCompile(`^([A-Za-z0-9_.-]+):`)
	varDefRE  = regexp.MustCompile(`^([A-Z_][A-Z0-9_]*)\s*(?::=|\?=|=)\s*(.*)$`)
	assignRE  = regexp.MustCompile(`\b([A-Z][A-Z0-9_]*)=`)
	goTestRE  = regexp.MustCompile(`\$\(GO\) test\b([^;|&]*)`)
	makeVarRE = regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)
)

// readMakefile reads the recipes of a Makefile (continuation lines
// joined), expanding its simple variables.
func readMakefile(path string) (*makefile, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	recipes := map[string]string{}
	target := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		switch {
		case strings.HasPrefix(line, "\t"):
			if target != "" {
				recipes[target] += line + "\n"
			}
		case varDefRE.MatchString(line):
			m := varDefRE.FindStringSubmatch(line)
			vars[m[1]] = m[2]
		case ruleRE.MatchString(line) && !strings.HasPrefix(line, ".PHONY"):
			target = ruleRE.FindStringSubmatch(line)[1]
		default:
			if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
				continue
			}
			target = ""
		}
	}
	mk := &makefile{targets: map[string]makeTarget{}}
	for name, recipe := range recipes {
		var tg makeTarget
		for _, m := range assignRE.FindAllStringSubmatch(recipe, -1) {
			tg.vars = append(tg.vars, m[1])
		}
		for _, m := range goTestRE.FindAllStringSubmatch(recipe, -1) {
			args := strings.Fields(makeVarRE.ReplaceAllStringFunc(m[1], func(v string) string {
				if val, ok := vars[makeVarRE.FindStringSubmatch(v)[1]]; ok && !strings.Contains(val, "$(shell") {
					return val
				}
				return v
			}))
			onlyFuzzOrBench := false
			for j, a := range args {
				afterFlag := j > 0 && strings.HasPrefix(args[j-1], "-") && !strings.Contains(args[j-1], "=")
				switch {
				case a == "-run" && j+1 < len(args) && (args[j+1] == "'^$$'" || args[j+1] == "'^$'"):
					onlyFuzzOrBench = true
				case a == "-tags" && j+1 < len(args):
					tg.tags = append(tg.tags, strings.Split(strings.Trim(args[j+1], "'\""), ",")...)
				case a == "-short" && name == "test":
					mk.testShort = true
				case a == "-skip" && j+1 < len(args) && name == "test":
					re, err := regexp.Compile(strings.Trim(args[j+1], "'\""))
					if err != nil {
						return nil, fmt.Errorf("%s: make test's -skip %s: %w", path, args[j+1], err)
					}
					mk.testSkip = re
				case strings.HasPrefix(a, "./") || a == ".":
					if !onlyFuzzOrBench {
						tg.patterns = append(tg.patterns, a)
					}
				case strings.HasPrefix(a, "$(") && !afterFlag:
					return nil, fmt.Errorf("%s: target %s: go test argument %s is not a pattern this check can read (./x, ./x/...): teach docs/proof_test.go's readMakefile", path, name, a)
				}
			}
		}
		if name == "test" {
			mk.testPatterns = tg.patterns
		} else {
			mk.targets[name] = tg
		}
	}
	if len(mk.testPatterns) == 0 {
		return nil, fmt.Errorf("%s: found no `$(GO) test … ./…` in the recipe of target test: teach docs/proof_test.go's readMakefile where make test's packages are", path)
	}
	return mk, nil
}

// covers reports whether a go test package pattern covers the package
// at rel (a path relative to the module root, "." for the root).
func covers(pattern, rel string) bool {
	pattern = strings.TrimPrefix(pattern, "./")
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	if pattern == "" || pattern == "." {
		return rel == "."
	}
	return rel == pattern
}

// testIndex finds test functions in the module's packages and judges
// whether make test runs them.
type testIndex struct {
	root string
	mk   *makefile
	pkgs map[string]*pkgTests
}

type pkgTests struct {
	funcs    map[string]*ast.FuncDecl // every func of the package's files
	tests    map[string]testStatus    // top-level Test/Fuzz/Benchmark funcs
	literals map[string]bool          // string literals: subtest names
	mainGate string                   // why TestMain keeps the package from running, if it does
	imports  map[string]string        // import name → in-module package (relative path)
}

func newTestIndex(root string, mk *makefile) *testIndex {
	return &testIndex{root: root, mk: mk, pkgs: map[string]*pkgTests{}}
}

// status says whether make test runs p.
func (x *testIndex) status(p proof) (testStatus, error) {
	pt, err := x.load(p.pkg)
	if err != nil {
		return testStatus{}, err
	}
	covered := false
	for _, pat := range x.mk.testPatterns {
		covered = covered || covers(pat, p.pkg)
	}
	if !covered {
		st := testStatus{why: "make test's go test does not cover package " + p.pkg}
		for name, tg := range x.mk.targets {
			for _, pat := range tg.patterns {
				if covers(pat, p.pkg) {
					st.marks = append(st.marks, "make "+name)
					break
				}
			}
		}
		slices.Sort(st.marks)
		if len(st.marks) == 0 {
			st.marks = []string{"the target that runs it"}
		}
		return st, nil
	}
	if pt.mainGate != "" {
		return testStatus{why: pt.mainGate, marks: x.marksFor(pt.mainGate)}, nil
	}
	if p.name == "" {
		for _, st := range pt.tests {
			if st.runs {
				return st, nil
			}
		}
		if len(pt.tests) == 0 {
			return testStatus{}, fmt.Errorf("no such test: the package has no tests")
		}
		for _, st := range pt.tests {
			return st, nil
		}
	}
	if st, ok := pt.tests[p.name]; ok {
		if st.runs && x.mk.testSkip != nil && x.mk.testSkip.MatchString(p.name) {
			return testStatus{why: "make test's -skip " + x.mk.testSkip.String() + " matches it", marks: []string{"make faults", "make soak"}}, nil
		}
		return st, nil
	}
	if !testFuncRE.MatchString(p.name) && pt.literals[p.name] {
		return testStatus{subtest: true}, nil
	}
	return testStatus{}, fmt.Errorf("no such test (grep -rn 'func %s' %s)", p.name, p.pkg)
}

// marksFor returns the words that mark a gate in a row: the make targets
// that set the variable or tag (the last word of why), and the variable
// or tag itself.
func (x *testIndex) marksFor(why string) []string {
	fields := strings.Fields(why)
	v := fields[len(fields)-1]
	var marks []string
	for name, tg := range x.mk.targets {
		if slices.Contains(tg.vars, v) || slices.Contains(tg.tags, v) {
			marks = append(marks, "make "+name)
		}
	}
	slices.Sort(marks)
	return append(marks, v)
}

// load parses the Go files of the package at rel.
func (x *testIndex) load(rel string) (*pkgTests, error) {
	if pt, ok := x.pkgs[rel]; ok {
		return pt, nil
	}
	dir := filepath.Join(x.root, rel)
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no such package")
	}
	pt := &pkgTests{funcs: map[string]*ast.FuncDecl{}, tests: map[string]testStatus{}, literals: map[string]bool{}, imports: map[string]string{}}
	fset := token.NewFileSet()
	type decl struct {
		fn  *ast.FuncDecl
		tag string // the build tag that excludes its file, if any
	}
	var tests []decl
	var testMain *ast.FuncDecl
	maps := map[string][]string{} // package-level map literals: their string keys
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		tag := excludingTag(file)
		for _, im := range file.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			rel, ok := strings.CutPrefix(path, module+"/")
			if !ok {
				continue
			}
			name := filepath.Base(rel)
			if im.Name != nil {
				name = im.Name.Name
			}
			pt.imports[name] = rel
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					pt.literals[s] = true
				}
			}
			return true
		})
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					pt.funcs[d.Name.Name] = d
				}
				if d.Recv == nil && strings.HasSuffix(f, "_test.go") && testFuncRE.MatchString(d.Name.Name) {
					tests = append(tests, decl{d, tag})
				}
				if d.Recv == nil && d.Name.Name == "TestMain" && tag == "" {
					testMain = d
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok {
						continue
					}
					for i, v := range vs.Values {
						if cl, ok := v.(*ast.CompositeLit); ok {
							if _, ok := cl.Type.(*ast.MapType); ok {
								for _, e := range cl.Elts {
									if kv, ok := e.(*ast.KeyValueExpr); ok {
										if lit, ok := kv.Key.(*ast.BasicLit); ok {
											if s, err := strconv.Unquote(lit.Value); err == nil {
												maps[vs.Names[i].Name] = append(maps[vs.Names[i].Name], s)
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	x.pkgs[rel] = pt
	if testMain != nil {
		if v := x.gateIn(pt, testMain.Body, 0, map[string]bool{}, true); v != "" {
			pt.mainGate = "TestMain exits unless " + v
		}
	}
	for _, d := range tests {
		name := d.fn.Name.Name
		if d.tag != "" {
			pt.tests[name] = testStatus{why: "behind build tag " + d.tag, marks: x.marksFor("tag " + d.tag)}
			continue
		}
		exempt := map[string]bool{}
		gate := x.gateIn(pt, d.fn.Body, 0, exempt, false)
		for m := range exempt {
			if slices.Contains(maps[m], name) {
				gate = ""
			}
		}
		switch {
		case gate != "":
			pt.tests[name] = testStatus{why: "skipped unless " + gate, marks: x.marksFor(gate)}
		case strings.HasPrefix(name, "Benchmark"):
			pt.tests[name] = testStatus{why: "a benchmark (go test runs it only with -bench)", marks: []string{"-bench"}}
		default:
			pt.tests[name] = testStatus{runs: true}
		}
	}
	return pt, nil
}

// gateIn looks in body, and in the package's functions it calls (three
// calls deep), for an if statement whose condition reads a variable that
// another Makefile target sets (or testing.Short() under make test's
// -short) and whose body skips the test (or, in TestMain, exits). It
// returns the variable, and notes in exempt the package-level maps the
// condition indexes with t.Name() (a list of tests the gate lets run).
func (x *testIndex) gateIn(pt *pkgTests, body *ast.BlockStmt, depth int, exempt map[string]bool, main bool) string {
	if body == nil || depth > 3 {
		return ""
	}
	gate := ""
	ast.Inspect(body, func(n ast.Node) bool {
		if gate != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.IfStmt:
			v := x.gateVar(n.Cond)
			if v == "" || !skips(n.Body, main) {
				return true
			}
			gate = v
			ast.Inspect(n.Cond, func(c ast.Node) bool {
				if ix, ok := c.(*ast.IndexExpr); ok {
					if id, ok := ix.X.(*ast.Ident); ok && callsName(ix.Index) {
						exempt[id.Name] = true
					}
				}
				return true
			})
			return false
		case *ast.CallExpr:
			callee, in := x.callee(pt, n)
			if callee != nil && !testFuncRE.MatchString(callee.Name.Name) {
				if v := x.gateIn(in, callee.Body, depth+1, exempt, main); v != "" {
					gate = v
					return false
				}
			}
		}
		return true
	})
	return gate
}

// callee returns the function a call names in the package or in an
// in-module package it imports (e2etest.Start), and that package.
func (x *testIndex) callee(pt *pkgTests, call *ast.CallExpr) (*ast.FuncDecl, *pkgTests) {
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		return pt.funcs[fun.Name], pt
	case *ast.SelectorExpr:
		id, ok := fun.X.(*ast.Ident)
		if !ok {
			return nil, nil
		}
		rel, ok := pt.imports[id.Name]
		if !ok {
			return nil, nil
		}
		other, err := x.load(rel)
		if err != nil {
			return nil, nil
		}
		return other.funcs[fun.Sel.Name], other
	}
	return nil, nil
}

// gateVar returns the variable a condition reads through os.Getenv when
// another Makefile target sets it, or "-short" for testing.Short() when
// make test runs with -short.
func (x *testIndex) gateVar(cond ast.Expr) string {
	found := ""
	ast.Inspect(cond, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, _ := sel.X.(*ast.Ident)
		switch {
		case pkg != nil && pkg.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv") && len(call.Args) == 1:
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			for _, tg := range x.mk.targets {
				if slices.Contains(tg.vars, name) {
					found = name
				}
			}
		case pkg != nil && pkg.Name == "testing" && sel.Sel.Name == "Short" && x.mk.testShort:
			found = "-short"
		}
		return found == ""
	})
	return found
}

// skips reports whether a block calls t.Skip, t.Skipf or t.SkipNow (in
// TestMain: os.Exit or return).
func skips(b *ast.BlockStmt, main bool) bool {
	found := false
	ast.Inspect(b, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ReturnStmt:
			found = found || main
		case *ast.SelectorExpr:
			switch n.Sel.Name {
			case "Skip", "Skipf", "SkipNow":
				found = found || !main
			case "Exit":
				found = found || main
			}
		}
		return !found
	})
	return found
}

// callsName reports whether e is a call of a Name method (t.Name()).
func callsName(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Name"
}

// excludingTag returns a build tag of the file's //go:build line that
// keeps make test (race detector, this platform, no -tags) from building
// it, or "" when make test builds it.
func excludingTag(f *ast.File) string {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return "(unreadable " + c.Text + ")"
			}
			var missing []string
			ok := expr.Eval(func(tag string) bool {
				on := tag == runtime.GOOS || tag == runtime.GOARCH || tag == "gc" || tag == "cgo" || tag == "race" ||
					(tag == "unix" && runtime.GOOS != "windows") || goVersionTag(tag)
				if !on {
					missing = append(missing, tag)
				}
				return on
			})
			if !ok {
				if len(missing) > 0 {
					return missing[0]
				}
				return strings.TrimPrefix(c.Text, "//go:build ")
			}
		}
	}
	return ""
}

// goVersionTag reports whether tag is a go1.N tag this toolchain sets.
func goVersionTag(tag string) bool {
	rest, ok := strings.CutPrefix(tag, "go1.")
	if !ok || rest == "" || strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsDigit(r) }) >= 0 {
		return false
	}
	n, _ := strconv.Atoi(rest)
	v := strings.TrimPrefix(runtime.Version(), "go1.")
	cur, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n <= cur
}

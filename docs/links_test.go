package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is the most README.md may grow to (issue 28: a guide of
// about 400 lines; the reference lives here).
const readmeMaxLines = 450

func TestREADMELength(t *testing.T) {
	lines, err := readLines("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move reference text to docs/ and link it", len(lines), readmeMaxLines)
	}
}

// pageMaxLines are the most lines a page of docs/ may grow to (issue 38):
// ARCHITECTURE.md is the model, the flow and the guarantees, and
// performance.md the current figures; the details and the history live in
// the pages they link.
var pageMaxLines = map[string]int{
	"ARCHITECTURE.md": 600,
	"performance.md":  200,
}

func TestPageLengths(t *testing.T) {
	for page, most := range pageMaxLines {
		lines, err := readLines(page)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) > most {
			t.Errorf("docs/%s has %d lines, more than %d: move details to a focused page (docs/wire.md, storage.md, failures.md, performance-history.md …) and link it", page, len(lines), most)
		}
	}
}

func TestLinks(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../README.md"}, files...)
	checked, problems := checkLinks(files)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("checked %d relative links in %d files", checked, len(files))
	if checked < 50 {
		t.Errorf("checked %d relative links in %v, expected at least 50: is the link parser still finding them?", checked, files)
	}
}

// TestCheckLinksReportsBroken proves the checker on files of its own: a
// missing file, a missing heading and a missing anchor in the same file
// are reported, and good links, external links and links in code are not.
func TestCheckLinksReportsBroken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("b.md", "# B\n\n## Deploy: image, releases, Kubernetes\n\n## Same\n\n## Same\n\n```sh\n# not a heading\n```\n")
	a := write("a.md", strings.Join([]string{
		"# A `code` heading (really)",
		"[ok](b.md) [ok](b.md#deploy-image-releases-kubernetes) [ok](b.md#same-1) [ok](#a-code-heading-really)",
		"[ok](https://example.com/x.md#nope) <http://127.0.0.1:9464/ui/> `[code](missing.md)`",
		"[gone](missing.md)",
		"[gone](b.md#not-a-heading)",
		"![gone](img/missing.png)",
		"[gone](#nowhere)",
		"```",
		"[code](missing-too.md)",
		"```",
	}, "\n"))
	checked, problems := checkLinks([]string{a})
	if checked != 8 {
		t.Errorf("checked %d links, want 8", checked)
	}
	want := []string{"missing.md", "b.md#not-a-heading", "img/missing.png", "#nowhere"}
	if len(problems) != len(want) {
		t.Fatalf("problems %q, want one each for %q", problems, want)
	}
	for i, w := range want {
		if !strings.Contains(problems[i], w) {
			t.Errorf("problem %d = %q, want it to name %q", i, problems[i], w)
		}
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Deploy: image, releases, Kubernetes":          "deploy-image-releases-kubernetes",
		"Kafka and HBase as clusters (`CLUSTER=1`)":    "kafka-and-hbase-as-clusters-cluster1",
		"One cell per task (HBase `d:e` envelope)":     "one-cell-per-task-hbase-de-envelope",
		"Delivery: the writer's batch size, 4th round": "delivery-the-writers-batch-size-4th-round",
		"snake_case and [a link](x.md)":                "snake_case-and-a-link",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

var (
	// linkRE matches inline links and images, [text](target "title").
	linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	// codeRE matches inline code spans, whose brackets are no links.
	codeRE = regexp.MustCompile("`[^`]*`")
	// headingRE matches an ATX heading.
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	schemeRE  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// inlineLinkRE matches a link in a heading, which renders as its text.
	inlineLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// checkLinks checks every relative link of files and returns how many it
// checked and one line per broken link.
func checkLinks(files []string) (checked int, problems []string) {
	anchors := map[string]map[string]bool{} // by path, read once
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		lines, err := readLines(path)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(lines)
		anchors[path] = a
		return a, nil
	}
	for _, f := range files {
		lines, err := readLines(f)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for n, line := range proseLines(lines) {
			if line == "" {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if schemeRE.MatchString(target) {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				path := filepath.Clean(f)
				if file != "" {
					path = filepath.Join(filepath.Dir(f), file)
					if _, err := os.Stat(path); err != nil {
						problems = append(problems, fmt.Sprintf("%s:%d: link %s: no such file %s", f, n+1, target, path))
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: anchor into a file that is not markdown", f, n+1, target))
					continue
				}
				a, err := anchorsOf(path)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: %v", f, n+1, target, err))
					continue
				}
				if !a[anchor] {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: %s has no heading with anchor #%s", f, n+1, target, path, anchor))
				}
			}
		}
	}
	return checked, problems
}

// proseLines returns lines with those inside fenced code blocks blanked,
// so that line numbers stay those of the file.
func proseLines(lines []string) []string {
	out := make([]string, len(lines))
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if !fence {
			out[i] = l
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the headings of a
// markdown file.
func headingAnchors(lines []string) map[string]bool {
	a := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(lines) {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			a[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	}
	return a
}

// slug is GitHub's anchor for a heading: the text as rendered (links by
// their text, code spans by their content), lower case, spaces to "-",
// every other character but letters, digits, "-" and "_" dropped.
func slug(heading string) string {
	heading = inlineLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return lines, nil
}

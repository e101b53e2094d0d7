package docexamples

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Environments a runnable block names.
const (
	Embedded      = "embedded"       // delayd --embedded, started by the test
	Stack         = "stack"          // delayd on the shared stack, started by the test
	StackServices = "stack-services" // the shared stack; the block starts delayd
)

// Block is one fenced shell example of a Markdown file.
type Block struct {
	File string // as given to Parse
	Line int    // line of the opening fence, 1-based
	Lang string // sh, bash, shell or console
	Text string // the lines between the fences

	Env      string // Embedded, Stack or StackServices; "" when not run
	Sequence string // the story it belongs to; "" for a block of its own
	NotRun   string // why the block is not run; "" when it is

	Expects []Expect
}

// Expect is a regular expression the block's output must match.
type Expect struct {
	Re     *regexp.Regexp
	Within time.Duration // 0: checked once after the block exited with 0
	// New: only matches beyond those the block printed when run once
	// before its sequence began count (for a shared topic read from the
	// beginning, whose earlier runs left the same line).
	New bool
}

// Where names the block as FILE:LINE.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// shellLangs are the fence info strings whose blocks are examples.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

var (
	exampleRe = regexp.MustCompile(`^<!-- example: (.*?) -->$`)
	expectRe  = regexp.MustCompile(`^<!-- expect( new)?(?: within (\S+))?: (.*) -->$`)
	notRunRe  = regexp.MustCompile(`^not run\s*(?:—|--|-|:)\s*(.*)$`)
)

// Parse returns the shell blocks of a Markdown file with their
// classification and expectations, and every problem found: a block
// without a classification, a malformed annotation, a bad expression, an
// unclosed fence.
func Parse(file string, src string) ([]Block, error) {
	lines := strings.Split(src, "\n")
	var blocks []Block
	var errs []error
	for i := 0; i < len(lines); i++ {
		fence, lang, ok := openingFence(lines[i])
		if !ok {
			continue
		}
		end := closingFence(lines, i+1, fence)
		if end < 0 {
			errs = append(errs, fmt.Errorf("%s:%d: fence %s not closed", file, i+1, fence))
			break
		}
		if shellLangs[lang] {
			b, bad := block(file, lines, i, end, lang)
			blocks = append(blocks, b)
			errs = append(errs, bad...)
		}
		i = end
	}
	return blocks, errors.Join(errs...)
}

// openingFence reports whether line opens a fenced block, with its fence
// (``` or ~~~, possibly longer) and info string's first word.
func openingFence(line string) (fence, lang string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return "", "", false
	}
	for _, c := range []string{"```", "~~~"} {
		if strings.HasPrefix(t, c) {
			n := len(t) - len(strings.TrimLeft(t, c[:1]))
			info := strings.Fields(t[n:])
			if len(info) > 0 {
				lang = info[0]
			}
			return t[:n], lang, true
		}
	}
	return "", "", false
}

func closingFence(lines []string, from int, fence string) int {
	for j := from; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
			return j
		}
	}
	return -1
}

func block(file string, lines []string, open, end int, lang string) (Block, []error) {
	b := Block{File: file, Line: open + 1, Lang: lang, Text: strings.Join(lines[open+1:end], "\n") + "\n"}
	var errs []error
	where := b.Where()
	if open == 0 {
		errs = append(errs, fmt.Errorf("%s: %s block without a classification (<!-- example: … --> on the line above)", where, lang))
	} else if m := exampleRe.FindStringSubmatch(strings.TrimSpace(lines[open-1])); m == nil {
		errs = append(errs, fmt.Errorf("%s: %s block without a classification (<!-- example: … --> on the line above)", where, lang))
	} else if err := b.classify(m[1]); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", where, err))
	}
	for j := end + 1; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if !strings.HasPrefix(t, "<!-- expect") {
			break
		}
		e, err := expect(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", file, j+1, err))
			continue
		}
		b.Expects = append(b.Expects, e)
	}
	if b.NotRun != "" && len(b.Expects) > 0 {
		errs = append(errs, fmt.Errorf("%s: a block that is not run has expectations", where))
	}
	return b, errs
}

// classify reads "ENV [sequence NAME]" or "not run — REASON".
func (b *Block) classify(s string) error {
	if m := notRunRe.FindStringSubmatch(s); m != nil {
		if strings.TrimSpace(m[1]) == "" {
			return errors.New(`"not run" needs a reason: <!-- example: not run — REASON -->`)
		}
		b.NotRun = strings.TrimSpace(m[1])
		return nil
	}
	f := strings.Fields(s)
	if len(f) == 0 {
		return errors.New("empty classification")
	}
	switch f[0] {
	case Embedded, Stack, StackServices:
		b.Env = f[0]
	default:
		return fmt.Errorf("classification %q: want embedded, stack, stack-services or not run — REASON", s)
	}
	switch {
	case len(f) == 1:
	case len(f) == 3 && f[1] == "sequence":
		b.Sequence = f[2]
	default:
		return fmt.Errorf("classification %q: want %s [sequence NAME]", s, f[0])
	}
	return nil
}

func expect(line string) (Expect, error) {
	m := expectRe.FindStringSubmatch(line)
	if m == nil {
		return Expect{}, fmt.Errorf("malformed %q: want <!-- expect [new] [within 30s]: REGEX -->", line)
	}
	e := Expect{New: m[1] != ""}
	if m[2] != "" {
		d, err := time.ParseDuration(m[2])
		if err != nil || d <= 0 {
			return Expect{}, fmt.Errorf("expect within %q: want a positive duration", m[2])
		}
		e.Within = d
	}
	re, err := regexp.Compile(m[3])
	if err != nil {
		return Expect{}, fmt.Errorf("expect: %w", err)
	}
	e.Re = re
	return e, nil
}

// Within is the longest Within of b's expectations (0: none polls).
func (b Block) Within() time.Duration {
	var d time.Duration
	for _, e := range b.Expects {
		d = max(d, e.Within)
	}
	return d
}

// Matches reports whether out matches every expectation of b, and the
// first expression it does not match. base holds, per expectation, the
// matches of the block's run before its sequence (nil: none); a New
// expectation needs more than those.
func (b Block) Matches(out string, base []int) (bool, string) {
	for i, e := range b.Expects {
		n := 1
		if e.New && i < len(base) {
			n += base[i]
		}
		if len(e.Re.FindAllStringIndex(out, n)) < n {
			return false, e.Re.String()
		}
	}
	return true, ""
}

// Count returns how often out matches each expectation of b.
func (b Block) Count(out string) []int {
	c := make([]int, len(b.Expects))
	for i, e := range b.Expects {
		c[i] = len(e.Re.FindAllStringIndex(out, -1))
	}
	return c
}

// HasNew reports whether an expectation of b is New.
func (b Block) HasNew() bool {
	for _, e := range b.Expects {
		if e.New {
			return true
		}
	}
	return false
}

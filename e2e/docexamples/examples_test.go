package docexamples

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	type want struct {
		env, seq, notRun string
		expects          []string
		within           time.Duration
	}
	tests := []struct {
		name   string
		src    string
		blocks []want
		errs   []string // substrings, one per problem
	}{
		{
			name:   "embedded with a polled expectation",
			src:    "text\n<!-- example: embedded -->\n```sh\nkcat -C\n```\n<!-- expect within 30s: key=order-1 -->\n<!-- expect: value=\\w+ -->\nmore\n",
			blocks: []want{{env: Embedded, expects: []string{"key=order-1", `value=\w+`}, within: 30 * time.Second}},
		},
		{
			name:   "a sequence on the stack, bash and console fences",
			src:    "<!-- example: stack sequence s1 -->\n```bash\na\n```\n<!-- example: stack-services sequence s1 -->\n~~~console\nb\n~~~\n",
			blocks: []want{{env: Stack, seq: "s1"}, {env: StackServices, seq: "s1"}},
		},
		{
			name:   "not run with its reason",
			src:    "<!-- example: not run — needs a cluster -->\n```sh\nkubectl apply\n```\n",
			blocks: []want{{notRun: "needs a cluster"}},
		},
		{
			name: "other fences are no examples",
			src:  "```go\nfunc main() {}\n```\n```\nplain\n```\n",
		},
		{
			name:   "unclassified",
			src:    "```sh\nmake run\n```\n",
			blocks: []want{{}},
			errs:   []string{"x.md:1: sh block without a classification"},
		},
		{
			name:   "a blank line between the comment and the fence",
			src:    "<!-- example: embedded -->\n\n```sh\nmake run\n```\n",
			blocks: []want{{}},
			errs:   []string{"x.md:3: sh block without a classification"},
		},
		{
			name:   "not run without a reason",
			src:    "<!-- example: not run — -->\n```sh\nx\n```\n",
			blocks: []want{{}},
			errs:   []string{`"not run" needs a reason`},
		},
		{
			name:   "unknown environment and a bad sequence",
			src:    "<!-- example: cluster -->\n```sh\nx\n```\n<!-- example: embedded sequence -->\n```sh\ny\n```\n",
			blocks: []want{{}, {env: Embedded}},
			errs:   []string{"want embedded, stack", "want embedded [sequence NAME]"},
		},
		{
			name:   "bad expectations",
			src:    "<!-- example: embedded -->\n```sh\nx\n```\n<!-- expect: ( -->\n<!-- expect within soon: x -->\n<!-- expect x -->\n",
			blocks: []want{{env: Embedded}},
			errs:   []string{"x.md:5: expect: error parsing regexp", `x.md:6: expect within "soon"`, "x.md:7: malformed"},
		},
		{
			name:   "an expectation on a block that is not run",
			src:    "<!-- example: not run — slow -->\n```sh\nx\n```\n<!-- expect: y -->\n",
			blocks: []want{{notRun: "slow", expects: []string{"y"}}},
			errs:   []string{"not run has expectations"},
		},
		{
			name: "an unclosed fence",
			src:  "<!-- example: embedded -->\n```sh\nx\n",
			errs: []string{"x.md:2: fence ``` not closed"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := Parse("x.md", tc.src)
			var problems []string
			if err != nil {
				problems = strings.Split(err.Error(), "\n")
			}
			if len(problems) != len(tc.errs) {
				t.Fatalf("problems %q, want %d naming %q", problems, len(tc.errs), tc.errs)
			}
			for i, w := range tc.errs {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], w)
				}
			}
			if len(blocks) != len(tc.blocks) {
				t.Fatalf("%d blocks, want %d: %+v", len(blocks), len(tc.blocks), blocks)
			}
			for i, w := range tc.blocks {
				b := blocks[i]
				var expects []string
				for _, e := range b.Expects {
					expects = append(expects, e.Re.String())
				}
				if b.Env != w.env || b.Sequence != w.seq || b.NotRun != w.notRun || b.Within() != w.within ||
					strings.Join(expects, "\x00") != strings.Join(w.expects, "\x00") {
					t.Errorf("block %d = env %q seq %q notRun %q expects %q within %v, want %+v", i, b.Env, b.Sequence, b.NotRun, expects, b.Within(), w)
				}
			}
		})
	}
}

func TestMatches(t *testing.T) {
	blocks, err := Parse("x.md", "<!-- example: embedded -->\n```sh\nx\n```\n<!-- expect: (?m)^a$ -->\n<!-- expect: b\\d -->\n")
	if err != nil {
		t.Fatal(err)
	}
	b := blocks[0]
	for _, tc := range []struct {
		out  string
		ok   bool
		miss string
	}{
		{"a\nb1\n", true, ""},
		{"xa\nb1\n", false, "(?m)^a$"},
		{"a\nb\n", false, `b\d`},
	} {
		ok, miss := b.Matches(tc.out, nil)
		if ok != tc.ok || miss != tc.miss {
			t.Errorf("Matches(%q) = %v, %q; want %v, %q", tc.out, ok, miss, tc.ok, tc.miss)
		}
	}
	if b.HasNew() {
		t.Error("HasNew without a new expectation")
	}
	if b.Text != "x\n" || b.Line != 2 || b.Lang != "sh" {
		t.Errorf("block %+v: want text %q at line 2, sh", b, "x\n")
	}
}

// TestMatchesNew: an "expect new" needs more matches than the block's run
// before its sequence printed.
func TestMatchesNew(t *testing.T) {
	blocks, err := Parse("x.md", "<!-- example: stack -->\n```sh\nx\n```\n<!-- expect new within 60s: key=\\w+ -->\n<!-- expect: end -->\n")
	if err != nil {
		t.Fatal(err)
	}
	b := blocks[0]
	if !b.HasNew() || !b.Expects[0].New || b.Expects[1].New || b.Within() != time.Minute {
		t.Fatalf("expects %+v: want the first new, within 1m", b.Expects)
	}
	base := b.Count("key=a\nkey=b\nend\n")
	if base[0] != 2 || base[1] != 1 {
		t.Fatalf("Count = %v, want [2 1]", base)
	}
	for _, tc := range []struct {
		out string
		ok  bool
	}{
		{"key=a\nkey=b\nend\n", false},       // only the earlier two
		{"key=a\nkey=b\nkey=c\nend\n", true}, // one more
		{"key=a\nkey=b\nkey=c\n", false},     // "end" is not new, but needed once
	} {
		if ok, _ := b.Matches(tc.out, base); ok != tc.ok {
			t.Errorf("Matches(%q, %v) = %v, want %v", tc.out, base, ok, tc.ok)
		}
	}
	if ok, _ := b.Matches("key=a\nend\n", nil); !ok {
		t.Error("without a baseline one match is enough")
	}
}

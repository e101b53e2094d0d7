package envflag

import (
	"errors"
	"flag"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Var is the environment variable that backs the flag name.
func Var(name string) string {
	return "DELAYQ_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Parse parses args into fs, then sets every flag not given in args from its
// DELAYQ_* variable, looked up with getenv (os.Getenv in production). A
// flag or variable it refuses is a *UsageError (flag.ErrHelp for -h and
// --help). fs should discard its output (SetOutput(io.Discard)): the flag
// package prints its own error and usage there.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError(fs, err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		v := getenv(Var(f.Name))
		if v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = &UsageError{Source: Var(f.Name), Value: v, HasValue: true, Reason: reason(f, e)}
		}
	})
	return err
}

// UsageError is a flag or a DELAYQ_* variable that Parse refused. Its
// Error is one line that names it, the value given and what was wrong.
type UsageError struct {
	Source   string // --tick, or DELAYQ_TICK
	Value    string // as given
	HasValue bool   // Value was given (an unknown flag has none)
	Reason   string // not a duration (like 1s, 500ms or 1m30s)
	Hint     string // did you mean --embedded?
}

func (e *UsageError) Error() string {
	s := e.Source
	if e.HasValue {
		s += "=" + strconv.Quote(e.Value)
	}
	s += ": " + e.Reason
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// The errors of the flag package (flag.FlagSet.Parse): their text is all
// it returns.
var (
	invalidValue = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-(\S+): `)
	undefined    = "flag provided but not defined: -"
	noArgument   = "flag needs an argument: -"
)

// usageError turns an error of fs.Parse into a *UsageError where the flag
// package's text says which flag it was.
func usageError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, undefined); ok {
		u := &UsageError{Source: "--" + name, Reason: "unknown flag"}
		if s := Suggest(fs, name); s != "" {
			u.Hint = "did you mean --" + s + "?"
		}
		return u
	}
	if name, ok := strings.CutPrefix(msg, noArgument); ok {
		u := &UsageError{Source: "--" + name, Reason: "needs a value"}
		if f := fs.Lookup(name); f != nil {
			u.Reason += ": " + want(f)
		}
		return u
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		v, uerr := strconv.Unquote(m[1])
		if uerr != nil {
			v = m[1]
		}
		u := &UsageError{Source: "--" + m[2], Value: v, HasValue: true, Reason: msg[len(m[0]):]}
		if f := fs.Lookup(m[2]); f != nil {
			u.Reason = reason(f, errors.New(u.Reason))
		}
		return u
	}
	return err // bad flag syntax: ---x, one line already
}

// reason says why f refused a value: what it wants, for the flag
// package's own types (whose errors say only "parse error"), else err.
func reason(f *flag.Flag, err error) string {
	if w := want(f); w != "" {
		return "not " + w
	}
	return err.Error()
}

// want describes the values f takes, "" for a type Parse does not know.
func want(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration (like 1s, 500ms or 1m30s)"
	case bool:
		return "true or false"
	case int, int64, uint, uint64:
		return "a whole number"
	case float64:
		return "a number"
	}
	return ""
}

// Suggest returns the flag of fs whose name is closest to name (a typo: at
// most 2 edits, or a unique flag that name begins), "" when none is.
func Suggest(fs *flag.FlagSet, name string) string {
	best, bestD, prefixed, nPrefixed := "", 3, "", 0
	fs.VisitAll(func(f *flag.Flag) {
		if d := distance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			prefixed, nPrefixed = f.Name, nPrefixed+1
		}
	})
	if best == "" && nPrefixed == 1 {
		return prefixed
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// List is a comma-separated flag value.
type List []string

func (l *List) String() string { return strings.Join(*l, ",") }

// Set replaces the list: a flag given twice keeps the last value, like the
// other flags.
func (l *List) Set(s string) error {
	*l = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

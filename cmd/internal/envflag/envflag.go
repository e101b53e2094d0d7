package envflag

import (
	"flag"
	"fmt"
	"strings"
)

// Var is the environment variable that backs the flag name.
func Var(name string) string {
	return "DELAYQ_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Parse parses args into fs, then sets every flag not given in args from its
// DELAYQ_* variable, looked up with getenv (os.Getenv in production).
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		return err
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
			err = fmt.Errorf("%s=%q: %w", Var(f.Name), v, e)
		}
	})
	return err
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

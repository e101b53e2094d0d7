package cli

import (
	"bufio"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/daemon"
)

// The flag defaults of delayd are those the Interfaces table of
// docs/ARCHITECTURE.md and README's delayd flags table document: the test
// reads the tables, so a default changed in code or in the docs alone
// fails it.
func TestDefaultsMatchInterfaces(t *testing.T) {
	t.Run("ARCHITECTURE", func(t *testing.T) {
		// The table's first rows, so that a table the parser no longer
		// reads cannot pass by checking nothing.
		checkDefaults(t, "../../../../docs/ARCHITECTURE.md", "## Interfaces",
			"brokers", "redis", "hbase-zk", "table", "prefix", "roles", "tick", "http", "max-delay", "embedded", "partitions", "hbase-zk-root")
	})
	t.Run("README", func(t *testing.T) {
		checkDefaults(t, "../../../../README.md", "### delayd flags",
			"brokers", "prefix", "tick", "salts", "segment", "shards", "zset-fill", "scan-coalesce", "scan-prefetch", "ingest-batch", "retention", "console", "log-level")
	})
}

// checkDefaults compares the defaults of the flag table under heading in
// path with delayd's, and fails unless the flags must were among them.
func checkDefaults(t *testing.T, path, heading string, must ...string) {
	cfg := daemon.DefaultConfig()
	fs, _ := NewFlagSet(&cfg)
	rows := flagTable(t, path, heading)
	checked := map[string]bool{}
	for _, r := range rows {
		for _, name := range r.flags {
			f := fs.Lookup(name)
			if f == nil {
				t.Errorf("docs list --%s, which delayd does not have", name)
				continue
			}
			want, ok := documented(r.def)
			if !ok {
				continue // described in words, not a value
			}
			checked[name] = true
			if !sameDefault(f, want) {
				t.Errorf("--%s defaults to %q; %s %q says %q", name, f.DefValue, path, heading, r.def)
			}
		}
	}
	for _, name := range must {
		if !checked[name] {
			t.Errorf("--%s: no default checked (is its row still in %s %q?)", name, path, heading)
		}
	}
}

type flagRow struct {
	flags []string // the flags the first column names (`--name`)
	def   string   // the default column
}

var flagCell = regexp.MustCompile("`--([a-z0-9-]+)`")

// flagTable returns the rows of the flag table in the section that
// starts with the heading line.
func flagTable(t *testing.T, path, heading string) []flagRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []flagRow
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			in = line == heading
		case in && strings.HasPrefix(line, "| `--"):
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			if len(cells) < 2 {
				t.Fatalf("%s: table row with %d cells: %s", path, len(cells), line)
			}
			var r flagRow
			for _, m := range flagCell.FindAllStringSubmatch(cells[0], -1) {
				r.flags = append(r.flags, m[1])
			}
			r.def = strings.TrimSpace(cells[1])
			rows = append(rows, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// documented returns the default a table cell states: the first `value`
// it starts with, "" for off and none, "true" for on; ok is false for a
// cell that says no value ("—") or describes one in words.
func documented(cell string) (string, bool) {
	switch {
	case cell == "off" || cell == "none":
		return "", true
	case cell == "on":
		return "true", true
	case strings.HasPrefix(cell, "`"):
		v, _, _ := strings.Cut(cell[1:], "`")
		return v, true
	}
	return "", false
}

// sameDefault reports whether f's default is want, durations compared as
// durations (`1m` is 1m0s) and off/none as the zero value.
func sameDefault(f *flag.Flag, want string) bool {
	if f.DefValue == want {
		return true
	}
	if want == "" {
		return f.DefValue == "false" || f.DefValue == "0"
	}
	d, err1 := time.ParseDuration(f.DefValue)
	w, err2 := time.ParseDuration(want)
	return err1 == nil && err2 == nil && d == w
}

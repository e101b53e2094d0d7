//go:build linux

package docexamples

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/e2e/e2etest"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m)) }

// root is the repository's root, seen from this package's folder.
const root = "../.."

// blockTimeout bounds a block without a polled expectation.
const blockTimeout = 90 * time.Second

// unit is what runs against one delayd: a block of its own or a sequence.
type unit struct {
	name   string
	env    string
	blocks []Block
}

// TestExamples runs every runnable example of README.md and docs/*.md as
// written (see the package doc) and prints how many ran and why the others
// do not.
func TestExamples(t *testing.T) {
	blocks := load(t)
	var units []*unit
	bySeq := map[string]*unit{}
	var notRun []Block
	for _, b := range blocks {
		switch {
		case b.NotRun != "":
			notRun = append(notRun, b)
		case b.Sequence == "":
			units = append(units, &unit{name: filepath.Base(b.File) + fmt.Sprintf(":%d", b.Line), env: b.Env, blocks: []Block{b}})
		case bySeq[b.Sequence] == nil:
			u := &unit{name: "sequence " + b.Sequence, env: b.Env, blocks: []Block{b}}
			bySeq[b.Sequence] = u
			units = append(units, u)
		default:
			u := bySeq[b.Sequence]
			if u.env != b.Env {
				t.Fatalf("%s: sequence %s runs %s, this block says %s", b.Where(), b.Sequence, u.env, b.Env)
			}
			u.blocks = append(u.blocks, b)
		}
	}
	t.Logf("%d shell blocks in README.md and docs/*.md: %d run (in %d units), %d not run", len(blocks), len(blocks)-len(notRun), len(units), len(notRun))
	for _, b := range notRun {
		t.Logf("not run %s: %s", b.Where(), b.NotRun)
	}
	if testing.Short() {
		t.Skip("short: the examples run delayd (TestClassified still checks every block's classification)")
	}
	for _, tool := range []string{"bash", "curl", "kcat"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s is not installed: run deploy/local/tools (%v)", tool, err)
			if stacktest.CI() {
				t.Fatal(msg + " (CI=true: never skipped)")
			}
			t.Skip(msg)
		}
	}
	bin := buildTools(t)
	for _, u := range units {
		t.Run(u.name, func(t *testing.T) {
			s := newScene(t, u.env, bin)
			base := map[int][]int{}
			for i, b := range u.blocks {
				if b.HasNew() {
					base[i] = s.baseline(t, b)
				}
			}
			for i, b := range u.blocks {
				s.run(t, b, base[i])
			}
		})
	}
}

// TestClassified needs no services: every shell block of the docs is
// classified and every annotation parses.
func TestClassified(t *testing.T) {
	blocks := load(t)
	if len(blocks) < 30 {
		t.Errorf("found %d shell blocks, expected at least 30: is the parser still finding them?", len(blocks))
	}
}

// load parses README.md and docs/*.md, failing on any problem.
func load(t *testing.T) []Block {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var all []Block
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		blocks, err := Parse(rel, string(src))
		if err != nil {
			t.Error(err)
		}
		all = append(all, blocks...)
	}
	if t.Failed() {
		t.FailNow()
	}
	return all
}

// buildTools builds delayd and delayctl from this tree into a folder that
// goes first on the blocks' PATH.
func buildTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(e2etest.Binary(t), filepath.Join(dir, "delayd")); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "delayctl"), "github.com/delayq/delayq/cmd/delayctl").CombinedOutput()
	if err != nil {
		t.Fatalf("go build delayctl: %v\n%s", err, out)
	}
	return dir
}

// scene is the delayd, environment and scratch folder of one unit.
type scene struct {
	dir      string
	env      []string
	replacer *strings.Replacer
	pgids    []int
	terms    []*terminal
}

// pick returns the documented address when it is free, else a free one.
func pick(t *testing.T, doc string) string {
	t.Helper()
	ln, err := net.Listen("tcp", doc)
	if err == nil {
		ln.Close()
		return doc
	}
	return e2etest.FreePort(t)
}

func newScene(t *testing.T, env, bin string) *scene {
	t.Helper()
	s := &scene{dir: t.TempDir()}
	addrs := map[string]string{}
	vars := map[string]string{}
	httpAddr, apiAddr := pick(t, "127.0.0.1:9464"), pick(t, "127.0.0.1:8080")
	addrs["127.0.0.1:9464"], addrs["127.0.0.1:8080"] = httpAddr, apiAddr
	switch env {
	case Embedded:
		brokers, rdb := pick(t, "127.0.0.1:9092"), pick(t, "127.0.0.1:6379")
		addrs["127.0.0.1:9092"], addrs["127.0.0.1:6379"] = brokers, rdb
		vars["DELAYQ_BROKERS"], vars["DELAYQ_REDIS"] = brokers, rdb
		t.Cleanup(s.stop)
		s.delayd(t, bin, httpAddr, "--embedded", "--roles", "ingest,dispatcher,scanner,api",
			"--brokers", brokers, "--redis", rdb, "--http", httpAddr, "--api", apiAddr)
	case Stack, StackServices:
		stack := e2etest.Shared(t)
		e2etest.LockShared(t) // no e2e delayd takes this unit's input, nor it theirs
		e := e2etest.NewEnv(t, stack, "docex")
		// After NewEnv, so it runs before NewEnv's cleanup drops the table
		// and keys: no delayd of the unit writes after that.
		t.Cleanup(s.stop)
		vars["DELAYQ_BROKERS"], vars["DELAYQ_REDIS"], vars["DELAYQ_HBASE_ZK"] = strings.Join(e.Brokers, ","), e.Redis, e.ZK
		vars["DELAYQ_PREFIX"], vars["DELAYQ_TABLE"], vars["DELAYQ_SALTS"] = e.Run, e.Run, "4"
		if env == StackServices {
			vars["DELAYQ_HTTP"], vars["DELAYQ_API"] = httpAddr, apiAddr
			break
		}
		s.delayd(t, bin, httpAddr, "--tick", "1s", "--roles", "ingest,dispatcher,scanner,api",
			"--brokers", vars["DELAYQ_BROKERS"], "--redis", e.Redis, "--hbase-zk", e.ZK,
			"--prefix", e.Run, "--table", e.Run, "--salts", "4", "--http", httpAddr, "--api", apiAddr)
	}
	var pairs []string
	for _, doc := range slices.Sorted(func(yield func(string) bool) {
		for k := range addrs {
			if !yield(k) {
				return
			}
		}
	}) {
		if got := addrs[doc]; got != doc {
			pairs = append(pairs, doc, got)
			t.Logf("documented %s is taken: the blocks run with %s in its place", doc, got)
		}
	}
	s.replacer = strings.NewReplacer(pairs...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DELAYQ_") && !strings.HasPrefix(kv, "PATH=") {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range vars {
		s.env = append(s.env, k+"="+v)
	}
	t.Logf("%s: %v", env, vars)
	return s
}

// delayd starts the unit's delayd and waits until it is ready.
func (s *scene) delayd(t *testing.T, bin, httpAddr string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(s.dir, "delayd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(bin, "delayd"), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.pgids = append(s.pgids, cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("delayd %s ready", strings.Join(args, " "))
				return
			}
		}
		select {
		case err := <-done:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("delayd %v exited before ready: %v\n%s", args, err, b)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("delayd %v not ready after 90s\n%s", args, b)
		}
	}
}

// stop ends the process groups the unit started: delayd, and what its
// blocks left in the background. SIGTERM first, so delayd leaves its
// consumer groups; SIGKILL after 30 s.
func (s *scene) stop() {
	for _, pgid := range s.pgids {
		syscall.Kill(-pgid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pgid := range s.pgids {
		for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	for _, t := range s.terms {
		t.Close()
	}
}

// baseline runs a block with a New expectation once before its sequence
// and returns how often its output matched each expectation then.
func (s *scene) baseline(t *testing.T, b Block) []int {
	t.Helper()
	script := s.script(t, b, "-before")
	out, _, _ := s.attempt(t, b, script, time.Now().Add(30*time.Second), false, nil)
	c := b.Count(out)
	t.Logf("%s: run once before its sequence, it matched %v times", b.Where(), c)
	return c
}

// script writes the block, its addresses rewritten, into the scratch folder.
func (s *scene) script(t *testing.T, b Block, suffix string) string {
	t.Helper()
	path := filepath.Join(s.dir, fmt.Sprintf("%s-%d%s.sh", strings.ReplaceAll(b.File, "/", "_"), b.Line, suffix))
	if err := os.WriteFile(path, []byte(s.replacer.Replace(b.Text)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs one block (see the package doc), failing the unit if it does
// not do what its text says.
func (s *scene) run(t *testing.T, b Block, base []int) {
	t.Helper()
	text := s.replacer.Replace(b.Text)
	script := s.script(t, b, "")
	within := b.Within()
	limit := blockTimeout
	if within > 0 {
		limit = within
	}
	start := time.Now()
	deadline := start.Add(limit)
	for attempt := 1; ; attempt++ {
		out, status, exited := s.attempt(t, b, script, deadline, within > 0, base)
		ok, miss := b.Matches(out, base)
		switch {
		case ok && (exited && status == nil || !exited && within > 0):
			t.Logf("%s: passed in %v (attempt %d); its output:\n%s", b.Where(), time.Since(start).Round(time.Millisecond), attempt, head(out, 2048))
			return
		case within > 0 && time.Now().Add(time.Second).Before(deadline):
			time.Sleep(time.Second)
			continue
		case !exited:
			t.Fatalf("%s: still running after %v, output not matching %q:\n%s\n--- the block as run:\n%s", b.Where(), limit, miss, out, text)
		case status != nil:
			t.Fatalf("%s: %v after %v (attempt %d):\n%s\n--- the block as run:\n%s", b.Where(), status, time.Since(start).Round(time.Millisecond), attempt, out, text)
		default:
			t.Fatalf("%s: output does not match %q (attempt %d):\n%s\n--- the block as run:\n%s", b.Where(), miss, attempt, out, text)
		}
	}
}

// attempt runs the script once, on a terminal of its own, until it exits,
// the deadline passes or, when poll is set, its output matches; a block
// still running then is stopped. It returns the output so far and whether
// the block exited, with its status.
func (s *scene) attempt(t *testing.T, b Block, script string, deadline time.Time, poll bool, base []int) (out string, status error, exited bool) {
	t.Helper()
	term, err := openTerminal()
	if err != nil {
		t.Fatal(err)
	}
	s.terms = append(s.terms, term)
	cmd := exec.Command("bash", "-euo", "pipefail", script)
	cmd.Dir, cmd.Env = s.dir, s.env
	cmd.Stdout, cmd.Stderr = term.slave, term.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	term.slave.Close() // the block's processes hold it now
	if err != nil {
		t.Fatal(err)
	}
	s.pgids = append(s.pgids, cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		<-done
	}
	for {
		select {
		case err := <-done:
			// Its last output may still be in the terminal; background
			// processes of the block keep it open, so wait a moment only.
			select {
			case <-term.done:
			case <-time.After(500 * time.Millisecond):
			}
			return term.String(), err, true
		case <-time.After(200 * time.Millisecond):
		}
		o := term.String()
		if ok, _ := b.Matches(o, base); ok && poll {
			stop()
			return o, nil, false
		}
		if time.Now().After(deadline) {
			stop()
			return o, nil, false
		}
	}
}

// head returns the first n bytes of s, saying how much it left out.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s\n… (%d more bytes)", s[:n], len(s)-n)
}

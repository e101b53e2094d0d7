package e2etest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/deploy/stacktest"
)

// PrivateStack is a stack of the project's own (deploy/local/stack) on
// ports of its own, for test packages that take services away or need
// another shape than the shared stack. Start it on first use and call
// Teardown from TestMain.
type PrivateStack struct {
	// Name names the data directory (.local/<Name>) and the log lines.
	Name string
	// Env holds the stack's variables: ports, REDIS_CLUSTER, heaps.
	Env []string
	// Services are started one by one (`start SERVICE`) and killed by
	// Teardown; nil: the whole stack (`up`; hbase, kafka, redis).
	Services []string

	once    sync.Once
	err     error
	root    string
	started bool
	watcher *exec.Cmd
}

// Start starts the stack once; later calls return the first one's error.
// It first removes what a run that died before its teardown left behind.
func (p *PrivateStack) Start() error {
	p.once.Do(func() { p.err = p.start() })
	return p.err
}

func (p *PrivateStack) start() error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	p.root = root
	if _, err := p.Cmd("down", "--wipe"); err != nil {
		return err
	}
	p.started = true
	if err := p.watch(); err != nil {
		return err
	}
	begin := time.Now()
	if p.Services == nil {
		if _, err := p.Cmd("up"); err != nil {
			return err
		}
	}
	for _, s := range p.Services {
		if _, err := p.Cmd("start", s); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "%s: private stack up in %v (data in %s)\n", p.Name, time.Since(begin).Round(time.Second), p.dataDir())
	return nil
}

// watch starts a process, in a process group of its own, that removes the
// stack once this test binary is gone: a timeout panic or a kill skips
// TestMain's teardown, and idle JVMs would stay behind.
func (p *PrivateStack) watch() error {
	script := fmt.Sprintf(`while kill -0 %d 2>/dev/null; do sleep 2; done; exec %q down --wipe`,
		os.Getpid(), filepath.Join(p.root, "deploy/local/stack"))
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = p.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the stack watcher: %w", err)
	}
	p.watcher = cmd
	return nil
}

// Require starts the stack on first use. With -short outside CI it skips
// t first, saying why (short: "the fault tests start a stack of their own
// …"); a stack that does not start fails t under CI=true (integration
// tests never skip there) and skips it otherwise.
func (p *PrivateStack) Require(t testing.TB, short string) {
	t.Helper()
	if testing.Short() && !stacktest.CI() {
		t.Skip("-short: " + short)
	}
	if err := p.Start(); err != nil {
		if stacktest.CI() {
			t.Fatalf("%s: private stack did not start (CI=true, integration tests never skip): %v", p.Name, err)
		}
		t.Skipf("%s: private stack did not start: %v", p.Name, err)
	}
}

// MainPrivate runs the tests of a package with a private stack (Main) and
// then removes the stack; it returns the exit code for os.Exit.
func MainPrivate(m *testing.M, p *PrivateStack) int {
	code := Main(m)
	if err := p.Teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: removing the private stack: %v\n", p.Name, err)
	}
	return code
}

// Addr is the loopback address of port.
func Addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// Teardown kills the services (their data go anyway) and wipes the stack,
// if Start started it.
func (p *PrivateStack) Teardown() error {
	if !p.started {
		return nil
	}
	if w := p.watcher; w != nil {
		_ = w.Process.Kill()
		_ = w.Wait()
	}
	services := p.Services
	if services == nil {
		services = []string{"hbase", "kafka", "redis"}
	}
	var errs []error
	for _, s := range services {
		if _, err := p.Cmd("stop", "--kill", s); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := p.Cmd("down", "--wipe"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (p *PrivateStack) dataDir() string { return filepath.Join(p.root, ".local", p.Name) }

// Dir returns the stack's data directory (DELAYQ_LOCAL_DIR) once Start
// has run.
func (p *PrivateStack) Dir() string { return p.dataDir() }

func (p *PrivateStack) env() []string {
	return append(append(os.Environ(), p.Env...), "DELAYQ_LOCAL_DIR="+p.dataDir())
}

// Cmd runs deploy/local/stack with args on the stack and returns how long
// it took; an error carries the end of its output.
func (p *PrivateStack) Cmd(args ...string) (time.Duration, error) {
	start := time.Now()
	_, err := p.Output(args...)
	return time.Since(start), err
}

// Output runs deploy/local/stack with args on the stack and returns what
// it wrote to stdout; an error carries the end of its output.
func (p *PrivateStack) Output(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(p.root, "deploy/local/stack"), args...)
	cmd.Env = p.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		s := stdout.String() + stderr.String()
		if len(s) > 3000 {
			s = "…" + s[len(s)-3000:]
		}
		return stdout.String(), fmt.Errorf("stack %s: %w\n%s", strings.Join(args, " "), err, s)
	}
	return stdout.String(), nil
}

// repoRoot is the directory of go.mod above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

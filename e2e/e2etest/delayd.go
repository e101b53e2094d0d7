package e2etest

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/deploy/stacktest"
)

var (
	buildOnce sync.Once
	buildDir  string // holds the built binary; "" when none was built
	binPath   string
	buildErr  error
)

// Main runs the tests of a package with m and removes the delayd binary
// they built; call it from TestMain as os.Exit(e2etest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	return code
}

// Binary builds cmd/delayd once per test binary and returns its path;
// $DELAYQ_E2E_DELAYD names a delayd binary to use instead (to compare two
// builds under the same tests).
func Binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		if bin := os.Getenv("DELAYQ_E2E_DELAYD"); bin != "" {
			binPath = bin
			return
		}
		dir, err := os.MkdirTemp("", "delayq-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir, binPath = dir, filepath.Join(dir, "delayd")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/delayq/delayq/cmd/delayd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build delayd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
}

// Stack is the address set of one Kafka, Redis and HBase.
type Stack struct {
	Brokers []string
	Redis   string
	ZK      string // HBase ZooKeeper quorum
}

// Shared returns the shared local stack (deploy/stacktest: skipped when a
// service is missing, failed under CI=true).
func Shared(tb testing.TB) Stack {
	tb.Helper()
	return Stack{Brokers: stacktest.Kafka(tb), Redis: stacktest.Redis(tb), ZK: stacktest.HBase(tb)}
}

// Env is one test's isolated corner of a stack.
type Env struct {
	T testing.TB
	Stack
	// Via, when it has brokers, is the address set delayd is given
	// instead of Stack: the same services through fault-injecting
	// proxies (ProxiedStack). The test's own clients use Stack.
	Via Stack
	Run string // unique per test: Redis prefix, HBase table, topic suffix
	// ReadyWithin is how long Start waits for /readyz (0: 90 s). A
	// delayd started while a dependency is away is ready only once it is
	// back: the soak restarts delayd during HBase and Kafka outages.
	ReadyWithin time.Duration

	mu     sync.Mutex
	logDir string
	procs  []*Delayd
}

// NewEnv gives the test its own run name on s. When the test ends, after
// every delayd it started stopped, its HBase table and Redis keys are
// dropped and its logs handled (see the package doc).
func NewEnv(t testing.TB, s Stack, name string) *Env {
	t.Helper()
	e := &Env{T: t, Stack: s, Run: fmt.Sprintf("%s%d", name, time.Now().UnixNano())}
	// Registered first, so it runs last: after every delayd of the test
	// stopped.
	t.Cleanup(func() {
		e.closeLogs()
		if s.ZK != "" {
			stacktest.DropTable(t, s.ZK, e.Run)
		}
		if s.Redis != "" {
			rdb := redis.NewClient(&redis.Options{Addr: s.Redis})
			defer rdb.Close()
			stacktest.DropKeys(t, rdb, e.Run)
		}
	})
	return e
}

// Topic returns name suffixed with the run name.
func (e *Env) Topic(name string) string { return name + "-" + e.Run }

// Seq returns the value of the "seq" header of this run's message i.
func (e *Env) Seq(i string) string { return e.Run + "/" + i }

// Delayd is one running delayd process.
type Delayd struct {
	Name string // instance name given to Start
	HTTP string // its --http address
	Log  string // path of its log file

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	err     error
}

// FreePort returns a TCP address on 127.0.0.1 that was free a moment ago.
func FreePort(tb testing.TB) string {
	tb.Helper()
	ln := Listen(tb)
	defer ln.Close()
	return ln.Addr().String()
}

// Listen listens on a free port of 127.0.0.1.
func Listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// Start runs delayd on the Env's stack with its prefix and table, a 1 s
// tick and 4 salts, plus the extra flags, and waits for /readyz
// (ReadyWithin, 90 s by default, at most). name tells instances apart in
// log file names.
func (e *Env) Start(name string, extra ...string) *Delayd {
	e.T.Helper()
	bin, dir := Binary(e.T), e.logs()
	d := &Delayd{Name: name, HTTP: FreePort(e.T), done: make(chan struct{})}
	e.mu.Lock()
	n := len(e.procs)
	e.mu.Unlock()
	d.Log = filepath.Join(dir, fmt.Sprintf("%02d-%s-%s.log", n, name, d.HTTP[strings.LastIndexByte(d.HTTP, ':')+1:]))
	f, err := os.Create(d.Log)
	if err != nil {
		e.T.Fatal(err)
	}
	d.logFile = f
	s := e.Stack
	if len(e.Via.Brokers) > 0 {
		s = e.Via
	}
	args := append([]string{
		"--brokers", strings.Join(s.Brokers, ","), "--redis", s.Redis, "--hbase-zk", s.ZK,
		"--table", e.Run, "--prefix", e.Run, "--tick", "1s", "--http", d.HTTP,
		"--salts", "4", "--log-level", "info",
	}, extra...)
	d.cmd = exec.Command(bin, args...)
	d.cmd.Stdout, d.cmd.Stderr = f, f
	d.cmd.Env = os.Environ()
	if err := d.cmd.Start(); err != nil {
		f.Close()
		e.T.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	e.mu.Lock()
	e.procs = append(e.procs, d)
	e.mu.Unlock()
	// A graceful stop leaves the consumer groups at once; a killed member
	// would hold its partitions for a session timeout into the next test.
	e.T.Cleanup(d.Terminate)
	within := cmp.Or(e.ReadyWithin, 90*time.Second)
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get("http://" + d.HTTP + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		select {
		case <-d.done:
			e.T.Fatalf("delayd %s exited before ready: %v\n%s", name, d.err, d.Tail(4096))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("delayd %s not ready after %v\n%s", name, within, d.Tail(4096))
		}
	}
}

// Stop sends SIGTERM and waits for a clean exit (60 s at most).
func (d *Delayd) Stop(tb testing.TB) {
	tb.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		if d.err != nil {
			tb.Fatalf("delayd %s exited with %v after SIGTERM\n%s", d.Name, d.err, d.Tail(4096))
		}
	case <-time.After(60 * time.Second):
		tb.Fatalf("delayd %s still running 60s after SIGTERM\n%s", d.Name, d.Tail(4096))
	}
}

// Pause stops the process with SIGSTOP: it holds its connections and
// sends nothing, as a process in a long GC pause or a frozen VM would.
func (d *Delayd) Pause() error { return d.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (d *Delayd) Resume() error { return d.cmd.Process.Signal(syscall.SIGCONT) }

// Terminate stops d gracefully if it still runs (continuing it first,
// should it be paused), killing it after 60 s.
func (d *Delayd) Terminate() {
	select {
	case <-d.done:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGCONT)
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		d.Kill()
	}
}

// Kill sends SIGKILL (kill -9) and waits for the process to go.
func (d *Delayd) Kill() {
	select {
	case <-d.done:
		return
	default:
	}
	d.cmd.Process.Kill()
	<-d.done
}

// Exited reports whether the process has ended.
func (d *Delayd) Exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Tail returns the last n bytes of d's log.
func (d *Delayd) Tail(n int64) string {
	f, err := os.Open(d.Log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return err.Error()
	}
	return string(b)
}

// Logs returns d's whole log.
func (d *Delayd) Logs() []byte {
	b, _ := os.ReadFile(d.Log)
	return b
}

// logs returns the Env's log folder, creating it on first use.
func (e *Env) logs() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.logDir != "" {
		return e.logDir
	}
	if dir := os.Getenv("DELAYQ_E2E_LOGS"); dir != "" {
		e.logDir = filepath.Join(dir, safeName(e.T.Name()))
		if err := os.MkdirAll(e.logDir, 0o755); err != nil {
			e.T.Fatal(err)
		}
		return e.logDir
	}
	dir, err := os.MkdirTemp("", "delayq-"+safeName(e.T.Name())+"-")
	if err != nil {
		e.T.Fatal(err)
	}
	e.logDir = dir
	return dir
}

// logTails is how many logs a failed test prints the tail of.
const logTails = 4

// closeLogs runs when the test ends: it prints the tails of the last logs
// and keeps the folder when the test failed, removes it when it passed
// (unless it is under $DELAYQ_E2E_LOGS).
func (e *Env) closeLogs() {
	e.mu.Lock()
	dir, procs := e.logDir, e.procs
	e.mu.Unlock()
	if dir == "" {
		return
	}
	for _, d := range procs {
		d.Terminate()
		d.logFile.Close()
	}
	if e.T.Failed() {
		for _, d := range procs[max(len(procs)-logTails, 0):] {
			e.T.Logf("delayd %s log %s (last 4 KiB):\n%s", d.Name, d.Log, d.Tail(4096))
		}
		e.T.Logf("delayd logs kept in %s", dir)
		return
	}
	if os.Getenv("DELAYQ_E2E_LOGS") == "" {
		os.RemoveAll(dir)
	}
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, s)
}

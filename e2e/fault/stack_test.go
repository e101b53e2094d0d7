package fault

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/topics"
)

// The private stack's ports: none of them is one of the shared stack's.
const (
	kafkaPort      = 19092
	controllerPort = 19093
	redisPort      = 16379
	zkPort         = 12181
	masterPort     = 16100
	regionPort     = 16120
)

var private struct {
	once    sync.Once
	err     error
	root    string // the repository
	started bool
	watcher *exec.Cmd
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := e2etest.Main(m)
	if private.started {
		if err := teardown(); err != nil {
			fmt.Fprintln(os.Stderr, "fault: removing the private stack:", err)
		}
	}
	os.Exit(code)
}

// stack returns the private stack, starting it on first use. With -short
// outside CI the test is skipped; a stack that does not start fails the
// test under CI=true and skips it otherwise.
func stack(t *testing.T) e2etest.Stack {
	t.Helper()
	if testing.Short() && !stacktest.CI() {
		t.Skip("-short: the fault tests start a stack of their own and run about 11 minutes")
	}
	private.once.Do(func() { private.err = startStack() })
	if private.err != nil {
		if stacktest.CI() {
			t.Fatalf("private stack did not start (CI=true, fault tests never skip): %v", private.err)
		}
		t.Skipf("private stack did not start: %v", private.err)
	}
	return e2etest.Stack{
		Brokers: []string{addr(kafkaPort)},
		Redis:   addr(redisPort),
		ZK:      addr(zkPort),
	}
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

func startStack() error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	private.root = root
	// Leftovers of a run that died before its teardown and its watcher.
	if _, err := stackCmd("down", "--wipe"); err != nil {
		return err
	}
	private.started = true
	if err := watch(); err != nil {
		return err
	}
	start := time.Now()
	if _, err := stackCmd("up"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "fault: private stack up in %v (data in %s)\n", time.Since(start).Round(time.Second), dataDir())
	return nil
}

// watch starts a process, in a process group of its own, that removes the
// private stack once this test binary is gone: a timeout panic or a kill
// skips TestMain's teardown, and two idle JVMs would stay behind.
func watch() error {
	script := fmt.Sprintf(`while kill -0 %d 2>/dev/null; do sleep 2; done; exec %q down --wipe`,
		os.Getpid(), filepath.Join(private.root, "deploy/local/stack"))
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = stackEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the stack watcher: %w", err)
	}
	private.watcher = cmd
	return nil
}

// teardown kills the services (their data go anyway) and wipes the stack.
func teardown() error {
	if w := private.watcher; w != nil {
		w.Process.Kill()
		w.Wait()
	}
	var errs []error
	for _, s := range []string{"hbase", "kafka", "redis"} {
		if _, err := stackCmd("stop", "--kill", s); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := stackCmd("down", "--wipe"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func dataDir() string { return filepath.Join(private.root, ".local", "fault") }

func stackEnv() []string {
	return append(os.Environ(),
		"KAFKA_PORT="+strconv.Itoa(kafkaPort),
		"KAFKA_CONTROLLER_PORT="+strconv.Itoa(controllerPort),
		"REDIS_PORT="+strconv.Itoa(redisPort),
		"HBASE_ZK_PORT="+strconv.Itoa(zkPort),
		"HBASE_MASTER_PORT="+strconv.Itoa(masterPort),
		"HBASE_REGIONSERVER_PORT="+strconv.Itoa(regionPort),
		"DELAYQ_LOCAL_DIR="+dataDir(),
		"KAFKA_HEAP=384m",
		"HBASE_HEAP=768m",
	)
}

// stackCmd runs deploy/local/stack with args on the private stack and
// returns how long it took.
func stackCmd(args ...string) (time.Duration, error) {
	cmd := exec.Command(filepath.Join(private.root, "deploy/local/stack"), args...)
	cmd.Env = stackEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return time.Since(start), fmt.Errorf("stack %s: %w\n%s", strings.Join(args, " "), err, lastBytes(out.String(), 3000))
	}
	return time.Since(start), nil
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

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

// stopService takes service away: SIGTERM, or SIGKILL when kill is set.
func stopService(t *testing.T, service string, kill bool) time.Duration {
	t.Helper()
	args := []string{"stop", service}
	if kill {
		args = []string{"stop", "--kill", service}
	}
	took, err := stackCmd(args...)
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// startService brings service back and waits until a real client call
// succeeds (3 minutes at most); it returns that moment.
func startService(t *testing.T, e *e2etest.Env, service string) time.Time {
	t.Helper()
	if _, err := stackCmd("start", service); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	var err error
	for time.Now().Before(deadline) {
		if err = answers(e, service); err == nil {
			return time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s started but does not answer after 3 minutes: %v", service, err)
	return time.Time{}
}

// answers makes one real client call to service.
func answers(e *e2etest.Env, service string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch service {
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: e.Redis})
		defer rdb.Close()
		return rdb.Ping(ctx).Err()
	case "kafka":
		client := &kafka.Client{Addr: kafka.TCP(e.Brokers...), Timeout: 5 * time.Second}
		md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topics.Input}})
		if err != nil {
			return err
		}
		for _, tp := range md.Topics {
			if tp.Error != nil {
				return tp.Error
			}
			for _, p := range tp.Partitions {
				if p.Error != nil || p.Leader.ID < 0 {
					return fmt.Errorf("%s/%d has no leader: %v", tp.Name, p.ID, p.Error)
				}
			}
		}
		return nil
	case "hbase":
		c := gohbase.NewClient(e.ZK, gohbase.Logger(slog.New(slog.DiscardHandler)))
		defer c.Close()
		get, err := hrpc.NewGetStr(ctx, e.Run, "probe")
		if err != nil {
			return err
		}
		_, err = c.Get(get)
		return err
	}
	return fmt.Errorf("unknown service %s", service)
}

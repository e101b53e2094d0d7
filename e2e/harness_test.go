package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/kafka/topics"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// delaydBinary builds cmd/delayd once per test binary.
func delaydBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "delayq-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "delayd")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/delayq/delayq/cmd/delayd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build delayd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// env is one test's isolated corner of the shared stack.
type env struct {
	t       *testing.T
	brokers []string
	redis   string
	zk      string
	run     string // unique per test: Redis prefix, HBase table, topic suffix
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{
		t:       t,
		brokers: stacktest.Kafka(t),
		redis:   stacktest.Redis(t),
		zk:      stacktest.HBase(t),
		run:     fmt.Sprintf("e2e%d", time.Now().UnixNano()),
	}
	// Registered first, so it runs last: after every delayd of the test
	// stopped.
	t.Cleanup(func() {
		stacktest.DropTable(t, e.zk, e.run)
		rdb := redis.NewClient(&redis.Options{Addr: e.redis})
		defer rdb.Close()
		stacktest.DropKeys(t, rdb, e.run)
	})
	return e
}

func (e *env) topic(name string) string { return name + "-" + e.run }

// delaydProc is one running delayd process.
type delaydProc struct {
	cmd  *exec.Cmd
	http string
	logs *syncWriter
	done chan struct{}
	err  error
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs delayd with this test's prefix and table and a 1 s tick, and
// waits for /readyz.
func (e *env) start(extra ...string) *delaydProc {
	e.t.Helper()
	d := &delaydProc{http: freePort(e.t), logs: &syncWriter{}, done: make(chan struct{})}
	args := append([]string{
		"--brokers", e.brokers[0], "--redis", e.redis, "--hbase-zk", e.zk,
		"--table", e.run, "--prefix", e.run, "--tick", "1s", "--http", d.http,
		"--salts", "4", "--log-level", "info",
	}, extra...)
	d.cmd = exec.Command(delaydBinary(e.t), args...)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs // one writer: exec shares one pipe
	d.cmd.Env = os.Environ()
	if err := d.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	// A graceful stop leaves the consumer groups at once; a killed member
	// would hold its partitions for a session timeout into the next test.
	e.t.Cleanup(d.terminate)
	e.t.Cleanup(func() { d.saveLogs(e.t) })
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get("http://" + d.http + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		select {
		case <-d.done:
			e.t.Fatalf("delayd exited before ready: %v\n%s", d.err, string(d.logs.bytes()))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("delayd not ready after 90s\n%s", string(d.logs.bytes()))
		}
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (d *delaydProc) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		if d.err != nil {
			t.Fatalf("delayd exited with %v after SIGTERM\n%s", d.err, string(d.logs.bytes()))
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("delayd still running 60s after SIGTERM\n%s", string(d.logs.bytes()))
	}
}

// saveLogs writes d's logs to $DELAYQ_E2E_LOGS/<test>-<port>.log when that
// variable names a folder, and to the test log when the test failed.
func (d *delaydProc) saveLogs(t *testing.T) {
	d.terminate()
	if dir := os.Getenv("DELAYQ_E2E_LOGS"); dir != "" {
		name := filepath.Join(dir, fmt.Sprintf("%s-%s.log", t.Name(), d.http[len("127.0.0.1:"):]))
		if err := os.WriteFile(name, d.logs.bytes(), 0o644); err != nil {
			t.Log(err)
		}
	}
	if t.Failed() {
		t.Logf("delayd %s logs (last 4 KiB):\n%s", d.http, tail(d.logs.bytes(), 4096))
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// terminate stops d gracefully if it still runs, killing it after 60 s.
func (d *delaydProc) terminate() {
	select {
	case <-d.done:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		d.kill()
	}
}

// kill sends SIGKILL (kill -9) and waits for the process to go.
func (d *delaydProc) kill() {
	select {
	case <-d.done:
		return
	default:
	}
	d.cmd.Process.Kill()
	<-d.done
}

// syncWriter collects a process's output; safe to read while it runs.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// submit produces a workload in its order: the cancels that precede their
// tasks, the tasks (with the malformed messages), the cancels that follow.
func (e *env) submit(ctx context.Context, w workload) {
	e.t.Helper()
	e.produce(ctx, w.early)
	e.produce(ctx, w.tasks)
	e.produce(ctx, w.late)
}

// produce writes input messages to delay-input with RequireAll.
func (e *env) produce(ctx context.Context, msgs []kafka.Message) {
	e.t.Helper()
	w := producer.New(producer.Config{Brokers: e.brokers})
	defer w.Close()
	for chunk := range slices.Chunk(msgs, 1000) {
		for i := range chunk {
			if chunk[i].Topic == "" {
				chunk[i].Topic = topics.Input
			}
			if chunk[i].Time.IsZero() {
				chunk[i].Time = time.Now()
			}
		}
		if err := w.WriteMessages(ctx, chunk...); err != nil {
			e.t.Fatalf("produce: %v", err)
		}
	}
}

// received is one message read from a topic, with the time it was read.
type received struct {
	msg kafka.Message
	at  time.Time
}

// collector reads a topic from its start until stopped.
type collector struct {
	mu   sync.Mutex
	msgs []received
	stop context.CancelFunc
	done chan struct{}
}

func (e *env) collect(topic string) *collector {
	e.t.Helper()
	if err := topics.Ensure(context.Background(), e.brokers, []topics.Spec{{Name: topic, Partitions: 4, ReplicationFactor: 1}}); err != nil {
		e.t.Fatalf("create %s: %v", topic, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &collector{stop: cancel, done: make(chan struct{})}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: e.brokers, Topic: topic, GroupID: "collect-" + e.run + "-" + topic,
		StartOffset: kafka.FirstOffset, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond,
		CommitInterval: time.Second,
	})
	go func() {
		defer close(c.done)
		defer r.Close()
		for {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				return
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, received{msg: m, at: time.Now()})
			c.mu.Unlock()
		}
	}()
	e.t.Cleanup(c.close)
	return c
}

func (c *collector) close() {
	c.stop()
	<-c.done
}

func (c *collector) snapshot() []received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// percentile of sorted durations, p in [0,1].
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

func itoa(i int) string { return strconv.Itoa(i) }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

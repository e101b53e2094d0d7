package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// TestConsoleOffLoopback runs `delayd --embedded --http 0.0.0.0:<port>`
// as a process, the way deploy/k8s/base listens, and reads the console as
// any client that reaches the port would (through a non-loopback address
// of this machine when it has one). Without DELAYQ_CONSOLE_TOKEN the
// console is off, one WARN line says how to turn it on, and /metrics still
// answers; with the token, every read is refused without it (401, no
// payload in the answer) and answered with it, payloads included, and
// the read is logged.
func TestConsoleOffLoopback(t *testing.T) {
	const token = "e2e-console-token-0123456789"
	host := reachableHost(t)

	off := startEmbedded(t, nil)
	if code, body := consoleGet(t, "http://"+net.JoinHostPort(host, off.port)+"/ui/api/failed", ""); code != http.StatusNotFound {
		t.Errorf("console without a token on 0.0.0.0: GET /ui/api/failed = %d %s, want 404 (off)", code, body)
	}
	if code, _ := consoleGet(t, "http://"+net.JoinHostPort(host, off.port)+"/metrics", ""); code != http.StatusOK {
		t.Errorf("/metrics = %d, want 200", code)
	}
	off.stop(t)
	if n := strings.Count(off.logs.String(), "console off"); n != 1 || !strings.Contains(off.logs.String(), "set DELAYQ_CONSOLE_TOKEN") {
		t.Errorf("want one WARN line saying the console is off and how to turn it on, got %d:\n%s", n, off.logs.String())
	}

	on := startEmbedded(t, []string{"DELAYQ_CONSOLE_TOKEN=" + token})
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	w := producer.New(producer.Config{Brokers: []string{on.kafka}})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx,
		kafka.Message{Topic: topics.Input, Key: []byte("k"), Value: []byte(`{"password":"hunter2"}`), Headers: []kafka.Header{
			{Key: payload.HeaderTopic, Value: []byte("orders")}, {Key: payload.HeaderID, Value: []byte("secret-task")},
			{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(at.UnixMilli(), 10))}}},
		kafka.Message{Topic: topics.Input, Key: []byte("bad"), Value: []byte(`{"password":"hunter3"}`), Headers: []kafka.Header{
			{Key: payload.HeaderAfter, Value: []byte("5s")}}}, // no delay-topic: to delay-failed
	); err != nil {
		t.Fatal(err)
	}
	base := "http://" + net.JoinHostPort(host, on.port) + "/ui/api/"
	task := base + "task?id=secret-task&at=" + strconv.FormatInt(at.UnixMilli(), 10)
	e2etest.WaitFor(t, 30*time.Second, "the task stored and the bad message in delay-failed", func() bool {
		_, tb := consoleGet(t, task, token)
		_, fb := consoleGet(t, base+"failed", token)
		return strings.Contains(tb, `"state":"pending"`) && strings.Contains(fb, "hunter3")
	})
	for _, u := range []string{task, base + "failed", base + "overview", base + "backlog"} {
		for _, auth := range []string{"", "wrong-token-0123456789"} {
			code, body := consoleGet(t, u, auth)
			if code != http.StatusUnauthorized || strings.Contains(body, "hunter") {
				t.Errorf("GET %s with token %q: %d %s, want 401 without payloads", u, auth, code, body)
			}
		}
		if code, body := consoleGet(t, u, token); code != http.StatusOK {
			t.Errorf("GET %s with the token: %d %s", u, code, body)
		}
	}
	if _, body := consoleGet(t, task, token); !strings.Contains(body, `hunter2`) {
		t.Errorf("the task read with the token lacks its payload: %s", body)
	}
	req, _ := http.NewRequest("GET", task, nil)
	req.Host = "attacker.example:" + on.port
	req.Header.Set("Authorization", "Bearer "+token)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host attacker.example: %v %v, want 421", res.StatusCode, err)
	} else {
		res.Body.Close()
	}
	on.stop(t)
	logs := on.logs.String()
	for _, want := range []string{"console task read", "secret-task", "console failed messages read", `"auth":"token"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("delayd's log lacks %s", want)
		}
	}
	if strings.Contains(logs, token) || strings.Contains(logs, "hunter2") {
		t.Error("delayd's log holds the token or a payload")
	}
}

// reachableHost is a non-loopback IPv4 address of this machine, so the
// requests come as from another host would; 127.0.0.1 when it has none.
func reachableHost(t *testing.T) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLoopback() && ip.IP.To4() != nil {
			t.Logf("reading the console through %s", ip.IP)
			return ip.IP.String()
		}
	}
	t.Log("no non-loopback address: reading the console through 127.0.0.1")
	return "127.0.0.1"
}

func consoleGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// embedded is a `delayd --embedded` process with --http on 0.0.0.0.
type embedded struct {
	kafka, port string
	logs        *syncBuffer
	cmd         *exec.Cmd
	done        chan error
}

func startEmbedded(t *testing.T, env []string) *embedded {
	t.Helper()
	_, port, _ := net.SplitHostPort(e2etest.FreePort(t))
	d := &embedded{kafka: e2etest.FreePort(t), port: port, logs: &syncBuffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(e2etest.Binary(t), "--embedded", "--brokers", d.kafka, "--redis", e2etest.FreePort(t),
		"--http", "0.0.0.0:"+port, "--partitions", "2", "--log-format", "json")
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("delayd output:\n%s", d.logs.String())
		}
	})
	e2etest.WaitReady(t, "127.0.0.1:"+port, 60*time.Second)
	return d
}

func (d *embedded) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("delayd after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("delayd still running 30s after SIGTERM")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

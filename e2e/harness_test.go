package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
)

// newEnv gives a test its own corner of the shared local stack, holding
// the shared stack's lock until the test ends (e2etest.LockShared: no
// other package's delayd takes this test's input, nor it theirs).
func newEnv(t *testing.T) *e2etest.Env {
	t.Helper()
	stack := e2etest.Shared(t)
	e2etest.LockShared(t) // before NewEnv: released after its cleanup
	return e2etest.NewEnv(t, stack, "e2e")
}

// embeddedEnv runs `delayd --embedded` in-process on free ports (kfake as
// Kafka, miniredis as Redis, the in-memory store; 4 partitions, 1 s tick)
// until the test ends, and returns an Env on its Kafka and Redis (no ZK:
// there is no HBase). opts adjust the
// config (roles, addresses) before it starts.
func embeddedEnv(t *testing.T, opts ...func(*daemon.Config)) *e2etest.Env {
	t.Helper()
	return embeddedEnvWith(t, daemon.Options{}, opts...)
}

// embeddedEnvWith is embeddedEnv with the daemon's Options (a tracer).
func embeddedEnvWith(t *testing.T, dopts daemon.Options, opts ...func(*daemon.Config)) *e2etest.Env {
	t.Helper()
	cfg := daemon.Config{
		Brokers: []string{"127.0.0.1:0"}, Redis: "127.0.0.1:0", HTTP: "127.0.0.1:0",
		Tick: time.Second, Partitions: 4,
	}
	for _, o := range opts {
		o(&cfg)
	}
	brokers, redis := e2etest.Embedded(t, cfg, dopts)
	return &e2etest.Env{T: t, Stack: e2etest.Stack{Brokers: []string{brokers}, Redis: redis}, Run: fmt.Sprintf("emb%d", time.Now().UnixNano())}
}

// awaitDelivery waits until every due task of l arrived (or timeout), then
// a little longer to catch duplicates and cancelled tasks, and judges.
func awaitDelivery(l e2etest.Ledger, out *e2etest.Collector, timeout time.Duration) e2etest.Report {
	deadline := time.Now().Add(timeout)
	for {
		r := l.Judge(out.Snapshot())
		if r.Lost == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // two more ticks: late duplicates show up here
	return l.Judge(out.Snapshot())
}

// checkFailed waits for every malformed message of l in delay-failed and
// checks that it came with a reason and its bytes, and that no valid task
// or cancel went there.
func checkFailed(t *testing.T, l e2etest.Ledger, failed *e2etest.Collector) {
	t.Helper()
	e2etest.WaitFor(t, 30*time.Second, "malformed messages in delay-failed", func() bool {
		return l.JudgeFailed(failed.Snapshot()).MalformedDone(l)
	})
	f := l.JudgeFailed(failed.Snapshot())
	for _, p := range f.Problems(l) {
		t.Error(p)
	}
	for seq, reason := range f.Malformed {
		t.Logf("delay-failed %s: %s", seq, reason)
	}
}

func mustBeClean(t *testing.T, r e2etest.Report) {
	t.Helper()
	if !r.Clean() {
		t.Errorf("delivery not clean: %v", r)
	}
}

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m)) }

// apiCall makes an HTTP API request to delayd at addr and returns the
// status and the JSON body (failing t when it is not JSON).
func apiCall(t *testing.T, addr, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %v", method, path, res.StatusCode, err)
	}
	return res.StatusCode, m
}

// waitAPI waits until the HTTP API at addr serves its OpenAPI document.
func waitAPI(t *testing.T, addr string) {
	t.Helper()
	e2etest.WaitFor(t, 30*time.Second, "the API to listen", func() bool {
		res, err := http.Get("http://" + addr + "/v1/openapi.yaml")
		if err == nil {
			res.Body.Close()
		}
		return err == nil
	})
}

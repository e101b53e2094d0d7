package e2e

import (
	"context"
	"fmt"
	"os"
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
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Embedded(ctx, cfg, dopts, func(brokers, redis string) { addrs <- [2]string{brokers, redis} })
	}()
	var a [2]string
	select {
	case a = <-addrs:
	case err := <-done:
		cancel()
		t.Fatalf("embedded delayd exited: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("embedded delayd did not start in 30s")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("embedded delayd: %v", err)
		}
	})
	return &e2etest.Env{T: t, Stack: e2etest.Stack{Brokers: []string{a[0]}, Redis: a[1]}, Run: fmt.Sprintf("emb%d", time.Now().UnixNano())}
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

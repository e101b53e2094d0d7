package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/delayq/delayq/e2e/e2etest"
)

// newEnv gives a test its own corner of the shared local stack.
func newEnv(t *testing.T) *e2etest.Env {
	t.Helper()
	return e2etest.NewEnv(t, e2etest.Shared(t), "e2e")
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

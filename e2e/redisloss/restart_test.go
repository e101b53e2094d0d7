package redisloss

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/e2e/e2etest"
)

const (
	// away is how long TestRestart's Redis stays down.
	away = 15 * time.Second
	// restartDups is the most duplicates TestRestart allows: a second of
	// the steady input (400 tasks/s). A kill -9 of the process loses
	// nothing Redis wrote to its append-only file, so what the repair
	// re-delivers is what it cannot tell apart: tasks recorded after the
	// watermark its last probe followed, less the margin for producer
	// clocks (repair.DefaultMargin), that fell due before the kill.
	restartDups = 400
)

// TestRestart is must-show 3 of issue 37: Redis killed -9 under steady
// input (400 tasks/s, delays 0-30 s, 3 % cancelled), 40 s into it, and
// started again 15 s later on its whole append-only file. delayd, with
// its default --repair-interval and --repair-lookback, sees the restart
// by the master's new replication id and repairs the tasks recorded
// since the watermark its last surviving probe followed, not the 2
// minutes before the loss: none lost, none early, no cancelled one
// delivered, at most a second of input delivered twice.
func TestRestart(t *testing.T) {
	e := stack(t)
	d := e.Start("a") // the default --repair-interval (5 s) and --repair-lookback (1 min)
	rdb := redis.NewClient(&redis.Options{Addr: e.Redis})
	t.Cleanup(func() { rdb.Close() })
	steady := e.NewPhase(t, "steady", []*e2etest.Delayd{d})
	steady.At(40 * time.Second) // tasks due at every point of the 30 s span were delivered

	killed := time.Now()
	if _, err := private.Cmd("stop", "--kill", "redis"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(killed.Add(away))) // the outage itself
	if _, err := private.Cmd("start", "redis"); err != nil {
		t.Fatal(err)
	}
	healed := waitHealed(t, rdb, e.Run, killed)
	o := steady.Finish()
	steady.Summary(o, fmt.Sprintf("(Redis away %v; index repaired %v after the kill: %s)",
		away, healed.Sub(killed).Round(time.Millisecond), metrics(t, d)))
	for _, line := range bytes.Split(d.Logs(), []byte("\n")) {
		if bytes.Contains(line, []byte(`"index repair`)) {
			t.Logf("delayd: %s", line)
		}
	}
	if !bytes.Contains(d.Logs(), []byte(`"cause":"restart"`)) {
		t.Errorf("delayd did not log a loss with cause restart; its log ends:\n%s", d.Tail(4096))
	}
	steady.Check(o, true)
	if o.Report.Duplicates > restartDups {
		t.Errorf("%d duplicate deliveries after a restart that lost nothing, want at most %d (a second of input; seq %v)",
			o.Report.Duplicates, restartDups, o.Report.DuplicateSeqs)
	}
}

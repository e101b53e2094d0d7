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
	// restartDups is the most duplicates of tasks Kafka accepted before
	// the kill TestRestart allows: a second of the steady input (400
	// tasks/s). A kill -9 of the process loses nothing Redis wrote to its
	// append-only file, so what the repair re-delivers of them is what it
	// cannot tell apart: tasks recorded after the watermarks its last
	// probe followed, less the margin for producer clocks
	// (repair.DefaultMargin), that fell due before the kill. The 2 minutes
	// before the loss it took before re-delivered thousands.
	restartDups = 400
)

// TestRestart is must-show 3 of issue 37: Redis killed -9 under steady
// input (400 tasks/s, delays 0-30 s, 3 % cancelled), 40 s into it, and
// started again 15 s later on its whole append-only file. delayd, with
// its default --repair-interval and --repair-lookback, sees the restart
// by the master's new replication id and repairs the tasks recorded
// since the watermark its last surviving probe followed, not the 2
// minutes before the loss: none lost, none early, no cancelled one
// delivered, at most a second of the input before the kill delivered
// twice. Tasks accepted while Redis was away are counted apart, not
// judged: ingest indexes them in the restarted Redis as soon as it is
// back, the overdue ones are delivered at once, and the repair, which
// runs up to --repair-interval later, re-indexes those recorded before
// its detection + 3 s (repair.Config.Recorded) and delivers them again.
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
	before, during := 0, 0
	seen := map[string]int{}
	for _, g := range steady.Out.Snapshot() {
		seq := e2etest.Header(g.Msg, "seq")
		due, ok := o.Ledger.Due[seq]
		if seen[seq]++; !ok || seen[seq] < 2 {
			continue
		}
		if due.Accepted.Before(killed) {
			before++
		} else {
			during++
		}
	}
	t.Logf("%d duplicate deliveries: %d of tasks accepted before the kill, %d of tasks accepted after it", o.Report.Duplicates, before, during)
	if before > restartDups {
		t.Errorf("%d duplicate deliveries of tasks accepted before a kill that lost nothing, want at most %d (a second of input)", before, restartDups)
	}
}

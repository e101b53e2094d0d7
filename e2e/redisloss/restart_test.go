package redisloss

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/e2e/e2etest"
)

const (
	// away is how long TestRestart's Redis stays down.
	away = 15 * time.Second
	// restartTarget is issue 37's target for the duplicates: a second of
	// the steady input (400 tasks/s). What the repair must re-deliver is
	// what it cannot tell apart: the tasks recorded after the watermarks
	// its last surviving probe followed less the margin for producer
	// clocks (repair.DefaultMargin, 3 s) that were delivered before the
	// kill. The rest are held: the scanner delivers nothing from the
	// restarted Redis until the repair has run (repair.Guard), and the
	// repair asks the index before it adds an overdue task again, so a
	// task due while Redis was away, or sent then, is delivered once (134
	// duplicates in all in one run; before, 188 to 1,087 of tasks
	// accepted before the kill alone; with the hold but no check, 2,983:
	// the repair's adds of overdue tasks after a minute's end went to a
	// new segment, beside the entry the index had).
	// The 2 minutes before the loss the repair took before that
	// re-delivered thousands.
	restartTarget = 400
)

// TestRestart is must-show 3 of issue 37: Redis killed -9 under steady
// input (400 tasks/s, delays 0-30 s, 3 % cancelled), 40 s into it, and
// started again 15 s later on its whole append-only file. delayd, with
// its default --repair-interval and --repair-lookback, sees the restart
// by the master's new replication id and repairs the tasks recorded
// since the watermark its last surviving probe followed, not the 2
// minutes before the loss: none lost, none early, no cancelled one
// delivered, no task accepted before that window delivered twice, and
// at most restartTarget duplicates in all (those of tasks accepted before
// the kill and while Redis was away are counted apart: ingest indexes the
// latter in the restarted Redis as soon as it is back, and the repair,
// which runs up to --repair-interval later, adds those recorded before
// its detection + 3 s again; the Guard's hold makes that add nothing).
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
	from, ok := restartWindow(d.Logs())
	if !ok {
		t.Fatalf("no \"index repair started\" line with cause restart and window probe; its log ends:\n%s", d.Tail(4096))
	}
	outside := 0
	for seq, n := range seen {
		if due, ok := o.Ledger.Due[seq]; ok && n > 1 && due.Accepted.Before(from) {
			outside++
		}
	}
	t.Logf("%d duplicate deliveries: %d of tasks accepted before the kill (target %d), %d of tasks accepted after it; the window started %v before the kill; %d duplicated tasks accepted before it",
		o.Report.Duplicates, before, restartTarget, during, killed.Sub(from).Round(time.Millisecond), outside)
	if o.Report.Duplicates > restartTarget {
		t.Errorf("%d duplicate deliveries (%d of tasks accepted before the kill, %d after), want at most %d (1 s of input)",
			o.Report.Duplicates, before, during, restartTarget)
	}
	if outside > 0 {
		t.Errorf("%d tasks accepted before the repair's window (recorded_from %s) were delivered twice: the repair re-delivered more than the probe said may be missing", outside, from.Format(time.RFC3339Nano))
	}
}

// restartWindow returns the recorded_from of the repair of cause restart
// whose window came from the probe, from delayd's JSON log.
func restartWindow(logs []byte) (time.Time, bool) {
	for _, line := range bytes.Split(logs, []byte("\n")) {
		var l struct {
			Msg, Cause, Window string
			RecordedFrom       time.Time `json:"recorded_from"`
		}
		if json.Unmarshal(line, &l) != nil || l.Msg != "index repair started" || l.Cause != "restart" {
			continue
		}
		return l.RecordedFrom, l.Window == "probe"
	}
	return time.Time{}, false
}

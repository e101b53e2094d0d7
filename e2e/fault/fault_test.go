package fault

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/e2e/e2etest"
)

// Timing shared by the tests: `make test` runs the short form, `make
// faults` (DELAYQ_FAULTS_FULL=1, e2etest.Full) the full one.
const (
	faultAt = 10 * time.Second // when an outage begins, after the input started
	onTime  = time.Second      // lateness under this is "back to normal"
)

var (
	restarts  = e2etest.Pick(4, 12)                          // TestRollingRestarts
	kills     = e2etest.Pick(6, 20)                          // TestKillNine
	hbaseDown = e2etest.Pick(30*time.Second, 60*time.Second) // TestHBaseOutage
)

// run is one fault test: a private-stack Env, its delayd instances and
// the phase (input, collectors, judgement) they go through.
type run struct {
	*e2etest.Phase
	t *testing.T
	e *e2etest.Env
}

func newRun(t *testing.T, instances int) *run {
	e := e2etest.NewEnv(t, stack(t), "fault")
	var procs []*e2etest.Delayd
	for i := range instances {
		procs = append(procs, e.Start(instance(i)))
	}
	return &run{Phase: e.NewPhase(t, "orders", procs), t: t, e: e}
}

func instance(i int) string { return "d" + strconv.Itoa(i) }

// restoreOnExit starts service again when the test ends, should it end
// (failed) while the service is away: the next test needs it.
func (r *run) restoreOnExit(service string) {
	r.t.Cleanup(func() {
		if _, err := private.Cmd("start", service); err != nil {
			r.t.Errorf("restore %s: %v", service, err)
		}
	})
}

// outage takes service away faultAt into the input (SIGTERM, or SIGKILL
// when kill is set), brings it back after down, and checks that the run
// heals: the figures include how long after the service answered again
// lateness stayed at or above 1 s.
func outage(t *testing.T, service string, kill bool, down time.Duration) {
	r := newRun(t, 1)
	r.restoreOnExit(service)
	r.At(faultAt)
	stopTook := stopService(t, service, kill)
	time.Sleep(down)
	startAt := time.Now()
	back := startService(t, r.e, service)
	o := r.Finish()
	how := "SIGTERM"
	if kill {
		how = "SIGKILL"
	}
	r.Summary(o, fmt.Sprintf("recovery=%v (%s %s took %v, away %v, answering %v after start)",
		e2etest.Ms(o.Report.Recovery(back, onTime)), service, how, e2etest.Ms(stopTook), down, e2etest.Ms(back.Sub(startAt))))
	r.Check(o, true)
}

// TestHBaseOutage: HBase stopped (SIGTERM) 10 s in, started again 30 s
// (full: 60 s) after it was gone.
func TestHBaseOutage(t *testing.T) { outage(t, "hbase", false, hbaseDown) }

// TestRedisOutage: Redis killed -9 10 s in, started again 15 s later on its
// append-only file.
func TestRedisOutage(t *testing.T) { outage(t, "redis", true, 15*time.Second) }

// TestKafkaOutage: Kafka stopped 10 s in, started again 30 s after it was
// gone. The input pauses meanwhile (the producer retries).
func TestKafkaOutage(t *testing.T) { outage(t, "kafka", false, 30*time.Second) }

// TestRollingRestarts: two delayd, restarted one after the other with
// SIGTERM four times (full: twelve) under steady input: nothing lost, nothing
// duplicated.
func TestRollingRestarts(t *testing.T) {
	r := newRun(t, 2)
	r.At(10 * time.Second)
	var exit, ready []time.Duration
	for i := range restarts {
		k := i % 2
		t0 := time.Now()
		r.Procs[k].Stop(t)
		t1 := time.Now()
		r.Procs[k] = r.e.Start(instance(k))
		exit, ready = append(exit, t1.Sub(t0)), append(ready, time.Since(t1))
		time.Sleep(3 * time.Second)
	}
	o := r.Finish()
	r.Summary(o, fmt.Sprintf("(%d restarts: SIGTERM exit %s, ready %s)", restarts, spread(exit), spread(ready)))
	r.Check(o, false)
}

// TestKillNine: two delayd, one of them killed -9 every 6 s and restarted
// 1 s later, six times (full: twenty): nothing lost; duplicates (at-least-once after a
// crash) and the worst stall (max lateness) are reported.
func TestKillNine(t *testing.T) {
	r := newRun(t, 2)
	var ready []time.Duration
	for i := range kills {
		r.At(10*time.Second + time.Duration(i)*6*time.Second)
		k := i % 2
		r.Procs[k].Kill()
		time.Sleep(time.Second)
		t0 := time.Now()
		r.Procs[k] = r.e.Start(instance(k))
		ready = append(ready, time.Since(t0))
	}
	o := r.Finish()
	r.Summary(o, fmt.Sprintf("worst_stall=%v (%d kill -9: ready again %s)",
		e2etest.Ms(e2etest.Percentile(o.Report.Lateness, 1)), kills, spread(ready)))
	r.Check(o, true)
}

// spread formats durations as min–max.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	lo, hi := ds[0], ds[0]
	for _, d := range ds {
		lo, hi = min(lo, d), max(hi, d)
	}
	return strings.Join([]string{e2etest.Ms(lo).String(), e2etest.Ms(hi).String()}, "–")
}

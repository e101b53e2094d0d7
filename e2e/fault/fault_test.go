package fault

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/topics"
)

// Timing shared by the tests.
const (
	faultAt  = 20 * time.Second // when an outage begins, after the input started
	tail     = 10 * time.Second // input after the last fault, then it stops
	drain    = 60 * time.Second // after the last due time: give up waiting
	stalled  = 15 * time.Second // no delivery for this long past the last due time + 20 s: give up
	settle   = 3 * time.Second  // after everything arrived: late duplicates show up here
	onTime   = time.Second      // lateness under this is "back to normal"
	restarts = 12               // TestRollingRestarts
	kills    = 20               // TestKillNine
)

// run is one fault test: a private-stack Env, its delayd instances, the
// collectors of its business topic and of delay-failed, and the input.
type run struct {
	t      *testing.T
	e      *e2etest.Env
	topic  string
	out    *e2etest.Collector
	failed *e2etest.Collector
	procs  []*e2etest.Delayd
	src    *source
	began  time.Time
}

func newRun(t *testing.T, instances int) *run {
	e := e2etest.NewEnv(t, stack(t), "fault")
	r := &run{t: t, e: e, topic: e.Topic("orders")}
	r.out, r.failed = e.Collect(r.topic), e.Collect(topics.Failed)
	for i := range instances {
		r.procs = append(r.procs, e.Start(instance(i)))
	}
	r.src = produce(e, r.topic)
	r.began = time.Now()
	return r
}

func instance(i int) string { return "d" + strconv.Itoa(i) }

// at sleeps until d after the input started.
func (r *run) at(d time.Duration) { time.Sleep(time.Until(r.began.Add(d))) }

// restoreOnExit starts service again when the test ends, should it end
// (failed) while the service is away: the next test needs it.
func (r *run) restoreOnExit(service string) {
	r.t.Cleanup(func() {
		if _, err := private.Cmd("start", service); err != nil {
			r.t.Errorf("restore %s: %v", service, err)
		}
	})
}

// outcome is a run judged once its pipeline drained.
type outcome struct {
	ledger e2etest.Ledger
	report e2etest.Report
	failed e2etest.Failed
	late   int // cancels Kafka accepted only after their task was due
	input  sourceStats
	waited time.Duration // from the end of the input to the judgement
}

// finish keeps the input running for tail, stops it, waits until every
// accepted task arrived and every malformed message reached delay-failed
// (at most until the last due time + drain, less when deliveries stalled
// well past it), lets late duplicates arrive and judges.
func (r *run) finish() outcome {
	time.Sleep(tail)
	l, lastDue, late := r.src.stopInput()
	stoppedAt := time.Now()
	deadline := lastDue.Add(drain)
	count, changed := -1, time.Now()
	for {
		if n := r.out.Len(); n != count {
			count, changed = n, time.Now()
		}
		rep, f := l.Judge(r.out.Snapshot()), l.JudgeFailed(r.failed.Snapshot())
		if rep.Lost == 0 && f.MalformedDone(l) {
			break
		}
		now := time.Now()
		if now.After(deadline) || now.After(lastDue.Add(20*time.Second)) && now.Sub(changed) > stalled {
			r.t.Logf("stopped waiting %v after the last due time: %d accepted tasks not delivered, %d of %d malformed in delay-failed",
				now.Sub(lastDue).Round(time.Second), rep.Lost, len(f.Malformed), len(l.Malformed))
			break
		}
		time.Sleep(time.Second)
	}
	time.Sleep(settle)
	return outcome{
		ledger: l,
		report: l.Judge(r.out.Snapshot()),
		failed: l.JudgeFailed(r.failed.Snapshot()),
		late:   late,
		input:  r.src.statistics(),
		waited: time.Since(stoppedAt),
	}
}

// summary writes the figures of the run in one line.
func (r *run) summary(o outcome, extra string) {
	rep := o.report
	r.t.Logf("%s: accepted=%d cancelled=%d malformed=%d delivered=%d lost=%d duplicates=%d early=%d "+
		"valid_in_failed=%d cancels_in_failed=%d cancelled_delivered=%d unknown=%d "+
		"lateness p50=%v p99=%v max=%v %s "+
		"| input paused up to %v (%d failed writes), %d cancels too late to count",
		r.t.Name(), rep.Accepted, len(o.ledger.Cancelled), len(o.ledger.Malformed), rep.Delivered, rep.Lost, rep.Duplicates, rep.Early,
		o.failed.Valid, o.failed.Cancels, rep.CancelledDelivered, rep.Unknown,
		ms(e2etest.Percentile(rep.Lateness, 0.50)), ms(e2etest.Percentile(rep.Lateness, 0.99)), ms(e2etest.Percentile(rep.Lateness, 1)),
		extra, ms(o.input.longest), o.input.retries, o.late)
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// check asserts what every fault test must show: nothing lost, early or
// unknown delivered, no cancelled task delivered (the scanner waits for
// ingest to catch up with the cancels queued behind a stall:
// internal/watermark); delay-failed holds every malformed message with its
// reason and no valid task or cancel; the delayd instances still run.
// Duplicates fail it only when dupsAllowed is false.
func (r *run) check(o outcome, dupsAllowed bool) {
	rep := o.report
	if rep.Lost != 0 {
		r.t.Errorf("%d of %d accepted tasks lost (seq %v)", rep.Lost, rep.Accepted, rep.LostSeqs)
	}
	if rep.Early != 0 {
		r.t.Errorf("%d tasks delivered before their due time", rep.Early)
	}
	if rep.CancelledDelivered != 0 {
		// Even task numbers had their cancel produced just before them,
		// odd ones 1–2 s after.
		r.t.Errorf("%d cancelled tasks delivered (seq %v)", rep.CancelledDelivered, rep.CancelledSeqs)
	}
	if rep.Unknown != 0 {
		r.t.Errorf("%d deliveries of tasks never accepted", rep.Unknown)
	}
	if !dupsAllowed && rep.Duplicates != 0 {
		r.t.Errorf("%d duplicate deliveries (seq %v)", rep.Duplicates, rep.DuplicateSeqs)
	}
	for _, p := range o.failed.Problems(o.ledger) {
		r.t.Error(p)
	}
	for _, d := range r.procs {
		if d.Exited() {
			r.t.Errorf("delayd %s exited by itself (log %s):\n%s", d.Name, d.Log, d.Tail(2048))
		}
	}
}

// outage takes service away faultAt into the input (SIGTERM, or SIGKILL
// when kill is set), brings it back after down, and checks that the run
// heals: the figures include how long after the service answered again
// lateness stayed at or above 1 s.
func outage(t *testing.T, service string, kill bool, down time.Duration) {
	r := newRun(t, 1)
	r.restoreOnExit(service)
	r.at(faultAt)
	stopTook := stopService(t, service, kill)
	time.Sleep(down)
	startAt := time.Now()
	back := startService(t, r.e, service)
	o := r.finish()
	how := "SIGTERM"
	if kill {
		how = "SIGKILL"
	}
	r.summary(o, fmt.Sprintf("recovery=%v (%s %s took %v, away %v, answering %v after start)",
		ms(o.report.Recovery(back, onTime)), service, how, ms(stopTook), down, ms(back.Sub(startAt))))
	r.check(o, true)
}

// TestHBaseOutage: HBase stopped (SIGTERM) 20 s in, started again 60 s
// after it was gone.
func TestHBaseOutage(t *testing.T) { outage(t, "hbase", false, 60*time.Second) }

// TestRedisOutage: Redis killed -9 20 s in, started again 15 s later on its
// append-only file.
func TestRedisOutage(t *testing.T) { outage(t, "redis", true, 15*time.Second) }

// TestKafkaOutage: Kafka stopped 20 s in, started again 30 s after it was
// gone. The input pauses meanwhile (the producer retries).
func TestKafkaOutage(t *testing.T) { outage(t, "kafka", false, 30*time.Second) }

// TestRollingRestarts: two delayd, restarted one after the other with
// SIGTERM twelve times under steady input: nothing lost, nothing
// duplicated.
func TestRollingRestarts(t *testing.T) {
	r := newRun(t, 2)
	r.at(10 * time.Second)
	var exit, ready []time.Duration
	for i := range restarts {
		k := i % 2
		t0 := time.Now()
		r.procs[k].Stop(t)
		t1 := time.Now()
		r.procs[k] = r.e.Start(instance(k))
		exit, ready = append(exit, t1.Sub(t0)), append(ready, time.Since(t1))
		time.Sleep(3 * time.Second)
	}
	o := r.finish()
	r.summary(o, fmt.Sprintf("(%d restarts: SIGTERM exit %s, ready %s)", restarts, spread(exit), spread(ready)))
	r.check(o, false)
}

// TestKillNine: two delayd, one of them killed -9 every 6 s and restarted
// 1 s later, twenty times: nothing lost; duplicates (at-least-once after a
// crash) and the worst stall (max lateness) are reported.
func TestKillNine(t *testing.T) {
	r := newRun(t, 2)
	var ready []time.Duration
	for i := range kills {
		r.at(10*time.Second + time.Duration(i)*6*time.Second)
		k := i % 2
		r.procs[k].Kill()
		time.Sleep(time.Second)
		t0 := time.Now()
		r.procs[k] = r.e.Start(instance(k))
		ready = append(ready, time.Since(t0))
	}
	o := r.finish()
	r.summary(o, fmt.Sprintf("worst_stall=%v (%d kill -9: ready again %s)",
		ms(e2etest.Percentile(o.report.Lateness, 1)), kills, spread(ready)))
	r.check(o, true)
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
	return strings.Join([]string{ms(lo).String(), ms(hi).String()}, "–")
}

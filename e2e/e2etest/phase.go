package e2etest

import (
	"testing"
	"time"

	"github.com/delayq/delayq/topics"
)

// Timing of a Phase.
const (
	tail    = 10 * time.Second // input after the last fault, then it stops
	drain   = 60 * time.Second // after the last due time: give up waiting
	stalled = 15 * time.Second // no delivery for this long past the last due time + 20 s: give up
	settle  = 3 * time.Second  // after everything arrived: late duplicates show up here
)

// Phase is one fault test's input and judgement: a Source of tasks for a
// business topic of its own, the collectors of that topic and of
// delay-failed, and the delayd instances that must survive it.
type Phase struct {
	T      testing.TB
	E      *Env
	Topic  string
	Out    *Collector
	Failed *Collector
	Procs  []*Delayd // checked for unexpected exits; callers replace restarted ones
	Src    *Source
	Began  time.Time // when the input started
}

// NewPhase collects business topic name (suffixed with the run name) and
// delay-failed and starts a Source to the topic; t receives the verdicts.
func (e *Env) NewPhase(t testing.TB, name string, procs []*Delayd) *Phase {
	p := &Phase{T: t, E: e, Topic: e.Topic(name), Procs: procs}
	p.Out, p.Failed = e.Collect(p.Topic), e.Collect(topics.Failed)
	p.Src = e.Stream(p.Topic, name+"/")
	p.Began = time.Now()
	return p
}

// At sleeps until d after the input started.
func (p *Phase) At(d time.Duration) { time.Sleep(time.Until(p.Began.Add(d))) }

// Outcome is a Phase judged once its pipeline drained.
type Outcome struct {
	Ledger Ledger
	Report Report
	Failed Failed
	Late   int // cancels Kafka accepted only after their task was due
	Input  SourceStats
	Waited time.Duration // from the end of the input to the judgement
}

// Finish keeps the input running for 10 s, stops it, waits until every
// accepted task arrived and every malformed message reached delay-failed
// (at most until the last due time + 60 s, less when deliveries stalled
// well past it), lets late duplicates arrive and judges.
func (p *Phase) Finish() Outcome {
	time.Sleep(tail)
	l, lastDue, late := p.Src.StopInput()
	stoppedAt := time.Now()
	deadline := lastDue.Add(drain)
	count, changed := -1, time.Now()
	for {
		if n := p.Out.Len(); n != count {
			count, changed = n, time.Now()
		}
		rep, f := l.Judge(p.Out.Snapshot()), l.JudgeFailed(p.Failed.Snapshot())
		if rep.Lost == 0 && f.MalformedDone(l) {
			break
		}
		now := time.Now()
		if now.After(deadline) || now.After(lastDue.Add(20*time.Second)) && now.Sub(changed) > stalled {
			p.T.Logf("stopped waiting %v after the last due time: %d accepted tasks not delivered, %d of %d malformed in delay-failed",
				now.Sub(lastDue).Round(time.Second), rep.Lost, len(f.Malformed), len(l.Malformed))
			break
		}
		time.Sleep(time.Second)
	}
	time.Sleep(settle)
	return Outcome{
		Ledger: l,
		Report: l.Judge(p.Out.Snapshot()),
		Failed: l.JudgeFailed(p.Failed.Snapshot()),
		Late:   late,
		Input:  p.Src.Statistics(),
		Waited: time.Since(stoppedAt),
	}
}

// Summary writes the figures of the phase in one line.
func (p *Phase) Summary(o Outcome, extra string) {
	rep := o.Report
	p.T.Logf("%s: accepted=%d cancelled=%d malformed=%d delivered=%d lost=%d duplicates=%d early=%d "+
		"valid_in_failed=%d cancels_in_failed=%d cancelled_delivered=%d unknown=%d "+
		"lateness p50=%v p99=%v max=%v %s "+
		"| input paused up to %v (%d failed writes), %d cancels too late to count",
		p.T.Name(), rep.Accepted, len(o.Ledger.Cancelled), len(o.Ledger.Malformed), rep.Delivered, rep.Lost, rep.Duplicates, rep.Early,
		o.Failed.Valid, o.Failed.Cancels, rep.CancelledDelivered, rep.Unknown,
		Ms(Percentile(rep.Lateness, 0.50)), Ms(Percentile(rep.Lateness, 0.99)), Ms(Percentile(rep.Lateness, 1)),
		extra, Ms(o.Input.Longest), o.Input.Retries, o.Late)
}

// Ms rounds d to the millisecond.
func Ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// Check asserts what every fault test must show: nothing lost, early or
// unknown delivered, no cancelled task delivered (the scanner waits for
// ingest to catch up with the cancels queued behind a stall:
// internal/watermark); delay-failed holds every malformed message with its
// reason and no valid task or cancel; the delayd instances still run.
// Duplicates fail it only when dupsAllowed is false.
func (p *Phase) Check(o Outcome, dupsAllowed bool) {
	rep, t := o.Report, p.T
	if rep.Lost != 0 {
		t.Errorf("%d of %d accepted tasks lost (seq %v)", rep.Lost, rep.Accepted, rep.LostSeqs)
	}
	if rep.Early != 0 {
		t.Errorf("%d tasks delivered before their due time", rep.Early)
	}
	if rep.CancelledDelivered != 0 {
		// Even task numbers had their cancel produced just before them,
		// odd ones 1–2 s after.
		t.Errorf("%d cancelled tasks delivered (seq %v)", rep.CancelledDelivered, rep.CancelledSeqs)
	}
	if rep.Unknown != 0 {
		t.Errorf("%d deliveries of tasks never accepted", rep.Unknown)
	}
	if !dupsAllowed && rep.Duplicates != 0 {
		t.Errorf("%d duplicate deliveries (seq %v)", rep.Duplicates, rep.DuplicateSeqs)
	}
	for _, problem := range o.Failed.Problems(o.Ledger) {
		t.Error(problem)
	}
	for _, d := range p.Procs {
		if d.Exited() {
			t.Errorf("delayd %s exited by itself (log %s):\n%s", d.Name, d.Log, d.Tail(2048))
		}
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/delayq/delayq/kafka/topics"
)

// deliverAll produces w, waits until every due task arrived (or timeout),
// then a little longer to catch duplicates and cancelled tasks, and judges.
func (e *env) awaitDelivery(w workload, out *collector, timeout time.Duration) report {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := w.judge(out.snapshot())
		if r.lost == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // two more ticks: late duplicates show up here
	return w.judge(out.snapshot())
}

func (e *env) checkFailed(w workload, failed *collector) {
	e.t.Helper()
	waitFor(e.t, 30*time.Second, "malformed messages in delay-failed", func() bool {
		n := 0
		for _, g := range failed.snapshot() {
			if w.malformed[header(g.msg, "seq")] {
				n++
			}
		}
		return n >= len(w.malformed)
	})
	reasons := map[string]string{}
	for _, g := range failed.snapshot() {
		seq := header(g.msg, "seq")
		if !w.malformed[seq] {
			if w.due[seq] != 0 {
				e.t.Errorf("valid task %s went to delay-failed: %s", seq, header(g.msg, "delay-error"))
			}
			continue
		}
		reason := header(g.msg, "delay-error")
		if reason == "" {
			e.t.Errorf("malformed %s in delay-failed without a delay-error header", seq)
		}
		if string(g.msg.Value) != "bad payload "+seq || string(g.msg.Key) != seq {
			e.t.Errorf("malformed %s: key/value not passed through: %q %q", seq, g.msg.Key, g.msg.Value)
		}
		reasons[seq] = reason
	}
	for seq, reason := range reasons {
		e.t.Logf("delay-failed %s: %s", seq, reason)
	}
}

func (e *env) mustBeClean(r report) {
	e.t.Helper()
	if r.lost != 0 || r.duplicates != 0 || r.early != 0 || r.cancelledDelivered != 0 || r.unknown != 0 {
		e.t.Errorf("delivery not clean: %v", r)
	}
}

// TestPipeline: 20,000 tasks over 0–30 s in all three time formats, 500
// cancels (half produced before their task) and a dozen malformed messages,
// through one delayd with a 1 s tick.
func TestPipeline(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("orders")
	out, failed := e.collect(topic), e.collect(topics.Failed)
	e.start()

	w := newWorkload(e.run, topic, 20000, 500, 30*time.Second, time.Now())
	ctx := context.Background()
	start := time.Now()
	e.submit(ctx, w)
	t.Logf("produced %d tasks, %d cancels, %d malformed in %v", len(w.due)+len(w.cancelled), len(w.cancelled), len(w.malformed), time.Since(start))

	r := e.awaitDelivery(w, out, 90*time.Second)
	t.Logf("TestPipeline: %v", r)
	e.mustBeClean(r)
	if r.delivered != len(w.due) {
		t.Errorf("delivered %d of %d", r.delivered, len(w.due))
	}
	e.checkFailed(w, failed)
	for _, g := range out.snapshot()[:1] {
		if header(g.msg, "delay-id") == "" || header(g.msg, "delay-at") == "" {
			t.Errorf("delivered message lacks delay-id/delay-at: %v", g.msg.Headers)
		}
	}
}

// TestTwoDaemons: two delayd processes share the work; each tick is
// dispatched once (no zset gets two scan tasks for the same tick); SIGTERM
// to one mid-run loses and duplicates nothing.
func TestTwoDaemons(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("orders")
	out, scans := e.collect(topic), e.collect(topics.Scan)
	a, _ := e.start(), e.start()

	w := newWorkload(e.run, topic, 5000, 100, 20*time.Second, time.Now())
	ctx := context.Background()
	e.submit(ctx, w)
	time.Sleep(8 * time.Second)
	a.stop(t)
	t.Log("SIGTERM to the first delayd: exited cleanly")

	r := e.awaitDelivery(w, out, 90*time.Second)
	t.Logf("TestTwoDaemons: %v", r)
	e.mustBeClean(r)

	// One dispatch per tick: a zset appears at most once per tick end.
	perTick := map[int64]map[string]int{}
	for _, g := range scans.snapshot() {
		var st struct {
			Zset  string `json:"zset"`
			Until int64  `json:"until"`
		}
		if err := json.Unmarshal(g.msg.Value, &st); err != nil || len(st.Zset) <= len(e.run) || st.Zset[:len(e.run)] != e.run {
			continue
		}
		if perTick[st.Until] == nil {
			perTick[st.Until] = map[string]int{}
		}
		perTick[st.Until][st.Zset]++
	}
	scanTasks, doubled := 0, 0
	for _, zsets := range perTick {
		for _, n := range zsets {
			scanTasks += n
			if n > 1 {
				doubled++
			}
		}
	}
	t.Logf("TestTwoDaemons: %d ticks dispatched, %d scan tasks, %d zsets dispatched twice in one tick", len(perTick), scanTasks, doubled)
	if len(perTick) == 0 {
		t.Error("no scan task seen on delay-scan")
	}
	if doubled != 0 {
		t.Errorf("%d zsets got two scan tasks in the same tick: two dispatchers won one tick", doubled)
	}
}

// TestKillAndRestart: kill -9 of delayd mid-run, then a restart: nothing is
// lost; duplicates are counted and reported (at-least-once after a crash).
func TestKillAndRestart(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("orders")
	out := e.collect(topic)
	d := e.start()

	w := newWorkload(e.run, topic, 10000, 100, 20*time.Second, time.Now())
	ctx := context.Background()
	e.submit(ctx, w)
	time.Sleep(7 * time.Second)
	d.kill()
	before := w.judge(out.snapshot()).delivered
	t.Logf("kill -9 after %d deliveries", before)
	time.Sleep(time.Second)
	e.start()

	r := e.awaitDelivery(w, out, 120*time.Second)
	t.Logf("TestKillAndRestart: %v", r)
	if r.lost != 0 || r.early != 0 || r.cancelledDelivered != 0 || r.unknown != 0 {
		t.Errorf("after kill -9 and restart: %v", r)
	}
}

// TestOutage: every delayd stopped for three ticks while tasks come due; on
// restart all of them are delivered.
func TestOutage(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("orders")
	out := e.collect(topic)
	d := e.start()

	w := newWorkload(e.run, topic, 2000, 50, 6*time.Second, time.Now().Add(2*time.Second))
	ctx := context.Background()
	e.submit(ctx, w)
	time.Sleep(1500 * time.Millisecond)
	d.stop(t)
	stopped := time.Now()
	time.Sleep(3 * time.Second)
	inOutage := w.judge(out.snapshot()).delivered
	time.Sleep(5 * time.Second) // the rest of the tasks come due while nothing runs
	t.Logf("outage of %v; %d delivered before it", time.Since(stopped).Round(time.Millisecond), inOutage)
	e.start()

	r := e.awaitDelivery(w, out, 60*time.Second)
	t.Logf("TestOutage: %v", r)
	e.mustBeClean(r)
}

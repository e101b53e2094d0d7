package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/topics"
)

// TestPipeline: 20,000 tasks over 0–30 s in all three time formats, 500
// cancels (half produced before their task) and a dozen malformed messages,
// through one delayd with a 1 s tick.
func TestPipeline(t *testing.T) {
	e := newEnv(t)
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	e.Start("d0")

	w := e.NewWorkload(topic, 20000, 500, 30*time.Second, time.Now())
	ctx := context.Background()
	start := time.Now()
	e.Submit(ctx, w)
	t.Logf("produced %d tasks, %d cancels, %d malformed in %v", len(w.Due)+len(w.Cancelled), len(w.Cancelled), len(w.Malformed), time.Since(start))

	r := awaitDelivery(w.Ledger, out, 90*time.Second)
	t.Logf("TestPipeline: %v", r)
	mustBeClean(t, r)
	if r.Delivered != len(w.Due) {
		t.Errorf("delivered %d of %d", r.Delivered, len(w.Due))
	}
	checkFailed(t, w.Ledger, failed)
	for _, g := range out.Snapshot()[:1] {
		if e2etest.Header(g.Msg, "delay-id") == "" || e2etest.Header(g.Msg, "delay-at") == "" {
			t.Errorf("delivered message lacks delay-id/delay-at: %v", g.Msg.Headers)
		}
	}
}

// TestTwoDaemons: two delayd processes share the work; each tick is
// dispatched once (no zset gets two scan tasks for the same tick); SIGTERM
// to one mid-run loses and duplicates nothing.
func TestTwoDaemons(t *testing.T) {
	e := newEnv(t)
	topic := e.Topic("orders")
	out, scans := e.Collect(topic), e.Collect(topics.Scan)
	a, _ := e.Start("d0"), e.Start("d1")

	w := e.NewWorkload(topic, 5000, 100, 20*time.Second, time.Now())
	ctx := context.Background()
	e.Submit(ctx, w)
	time.Sleep(8 * time.Second)
	a.Stop(t)
	t.Log("SIGTERM to the first delayd: exited cleanly")

	r := awaitDelivery(w.Ledger, out, 90*time.Second)
	t.Logf("TestTwoDaemons: %v", r)
	mustBeClean(t, r)

	// One dispatch per tick: a zset appears at most once per tick end.
	perTick := map[int64]map[string]int{}
	for _, g := range scans.Snapshot() {
		var st struct {
			Zset  string `json:"zset"`
			Until int64  `json:"until"`
		}
		if err := json.Unmarshal(g.Msg.Value, &st); err != nil || !strings.HasPrefix(st.Zset, e.Run+":") {
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
	topic := e.Topic("orders")
	out := e.Collect(topic)
	d := e.Start("d0")

	w := e.NewWorkload(topic, 10000, 100, 20*time.Second, time.Now())
	ctx := context.Background()
	e.Submit(ctx, w)
	time.Sleep(7 * time.Second)
	d.Kill()
	before := w.Judge(out.Snapshot()).Delivered
	t.Logf("kill -9 after %d deliveries", before)
	time.Sleep(time.Second)
	e.Start("d0")

	r := awaitDelivery(w.Ledger, out, 120*time.Second)
	t.Logf("TestKillAndRestart: %v", r)
	if r.Lost != 0 || r.Early != 0 || r.CancelledDelivered != 0 || r.Unknown != 0 {
		t.Errorf("after kill -9 and restart: %v", r)
	}
}

// TestOutage: every delayd stopped for three ticks while tasks come due; on
// restart all of them are delivered.
func TestOutage(t *testing.T) {
	e := newEnv(t)
	topic := e.Topic("orders")
	out := e.Collect(topic)
	d := e.Start("d0")

	w := e.NewWorkload(topic, 2000, 50, 6*time.Second, time.Now().Add(2*time.Second))
	ctx := context.Background()
	e.Submit(ctx, w)
	time.Sleep(1500 * time.Millisecond)
	d.Stop(t)
	stopped := time.Now()
	time.Sleep(3 * time.Second)
	inOutage := w.Judge(out.Snapshot()).Delivered
	time.Sleep(5 * time.Second) // the rest of the tasks come due while nothing runs
	t.Logf("outage of %v; %d delivered before it", time.Since(stopped).Round(time.Millisecond), inOutage)
	e.Start("d0")

	r := awaitDelivery(w.Ledger, out, 60*time.Second)
	t.Logf("TestOutage: %v", r)
	mustBeClean(t, r)
}

// TestKillOneOfTwo: two delayd share 400 tasks/s over 30 s; one is killed
// -9 a third of the way in and not restarted. The survivor takes over its
// delay-input and delay-scan partitions once the coordinator declares the
// dead member gone (consumer.SessionTimeout after its last heartbeat, plus
// a rebalance), so the longest gap between deliveries stays within twice
// the session timeout (issue 37), and nothing is lost.
func TestKillOneOfTwo(t *testing.T) {
	e := newEnv(t)
	topic := e.Topic("orders")
	out := e.Collect(topic)
	a, _ := e.Start("d0"), e.Start("d1")

	const span = 30 * time.Second
	w := e.NewWorkload(topic, 12000, 100, span, time.Now())
	e.Submit(context.Background(), w)
	e2etest.WaitFor(t, span, "a third of the tasks delivered", func() bool {
		return w.Judge(out.Snapshot()).Delivered >= len(w.Due)/3
	})
	a.Kill()
	killed := time.Now()
	t.Logf("kill -9 of d0 after %d deliveries", w.Judge(out.Snapshot()).Delivered)

	r := awaitDelivery(w.Ledger, out, 120*time.Second)
	gap, limit := r.LongestGap(), 2*consumer.SessionTimeout
	t.Logf("TestKillOneOfTwo: %v; longest gap between deliveries %v (limit %v); lateness back under 1s %v after the kill",
		r, gap.Round(time.Millisecond), limit, r.Recovery(killed, time.Second).Round(time.Millisecond))
	if r.Lost != 0 || r.Early != 0 || r.CancelledDelivered != 0 || r.Unknown != 0 {
		t.Errorf("after kill -9 of one of two: %v", r)
	}
	if gap > limit {
		t.Errorf("longest gap between deliveries %v, more than 2 × the session timeout (%v)", gap, limit)
	}
}

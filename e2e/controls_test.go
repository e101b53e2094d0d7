package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/scanner"
	"github.com/delayq/delayq/topicctl"
	"github.com/delayq/delayq/topics"
)

// controlSizes scale the topic-control scenarios: the real stack runs the
// sizes of issue 29, embedded mode smaller ones.
type controlSizes struct {
	paused, other, expiring int
	pause                   time.Duration // how long the topics stay paused
	expireAfter             time.Duration
	burst, rate             int // tasks due at once, and the topic's rate
	// figuresOnly: report the other topic's lateness and the burst's rate
	// without judging them. Embedded mode runs on the test machine's CPU
	// beside the rest of the suite, where they measure the load; the real
	// stack's TestTopicControls judges them.
	figuresOnly bool
}

// TestTopicControls drives pause, resume, rate and expiry through the
// HTTP API on the real stack, with two delayd (one serving the API): a
// paused topic gets nothing while paused and everything once after resume,
// in due order (but one cancelled while held and one rescheduled while
// paused), while
// another topic's p99 lateness stays what it was without the pause; tasks with delay-expire-after 5s due during a 20 s
// pause all go to delay-failed as expired; 5,000 tasks due at once for a
// topic at 500/s go out over 9–11 s in due order across both instances.
func TestTopicControls(t *testing.T) {
	e := newEnv(t)
	apiAddr := e2etest.FreePort(t)
	e.Start("d1", "--roles", "ingest,dispatcher,scanner,api", "--api", apiAddr)
	e.Start("d2")
	runControls(t, e, "http://"+apiAddr, controlSizes{
		paused: 1000, other: 300, expiring: 200, pause: 20 * time.Second, expireAfter: 5 * time.Second,
		burst: 5000, rate: 500,
	})
}

// TestEmbeddedTopicControls is TestTopicControls in embedded mode, smaller;
// it reports the lateness beside paused topics and the burst's rate
// without judging them (figuresOnly).
func TestEmbeddedTopicControls(t *testing.T) {
	apiAddr := e2etest.FreePort(t)
	e := embeddedEnv(t, func(c *daemon.Config) {
		c.Roles = append(slices.Clone(daemon.AllRoles), daemon.RoleAPI)
		c.API = apiAddr
	})
	waitAPI(t, apiAddr)
	runControls(t, e, "http://"+apiAddr, controlSizes{
		paused: 200, other: 100, expiring: 50, pause: 8 * time.Second, expireAfter: time.Second,
		burst: 1000, rate: 250, figuresOnly: true,
	})
}

func runControls(t *testing.T, e *e2etest.Env, base string, sz controlSizes) {
	ctx := context.Background()
	paused, other, expiring, limited := e.Topic("paused"), e.Topic("other"), e.Topic("expiring"), e.Topic("limited")
	outP, outO, outX, outL, failed := e.Collect(paused), e.Collect(other), e.Collect(expiring), e.Collect(limited), e.Collect(topics.Failed)
	call := func(method, path, body string) map[string]any {
		t.Helper()
		code, m := apiCall(t, strings.TrimPrefix(base, "http://"), method, path, body)
		if code != http.StatusOK {
			t.Fatalf("%s %s: %d %v", method, path, code, m)
		}
		return m
	}

	// Baseline: the other topic beside as many tasks of a topic that is
	// not paused, due over 2 s.
	start := time.Now().Add(3 * time.Second)
	e.Collect(e.Topic("load")) // creates it
	e.Produce(ctx, spread(e, e.Topic("load"), "load", sz.paused+sz.expiring, start, 2*time.Second))
	e.Produce(ctx, spread(e, other, "base", sz.other, start, 2*time.Second))
	// The waits below are bounds for a loaded machine (a busy loop on one
	// of two cores, other test packages beside), not expectations.
	e2etest.WaitFor(t, 90*time.Second, "baseline delivered", func() bool { return outO.Len() >= sz.other })
	base99 := p99(outO.Snapshot())

	// Pause two topics; submit to them and to the other topic, due in the
	// same 2 s.
	call("POST", "/v1/topics/"+paused+"/pause", "")
	call("POST", "/v1/topics/"+expiring+"/pause", "")
	time.Sleep(500 * time.Millisecond) // past topicctl's refresh
	pausedAt := time.Now()
	// Due 5 s on: on a loaded machine the reschedule below must still be
	// recorded 2 s or more before p-1's due time (else it is refused).
	start = time.Now().Add(5 * time.Second)
	e.Produce(ctx, spread(e, paused, "p", sz.paused, start, 2*time.Second))
	// A reschedule works on a paused topic's task before it is due (once
	// due, a reschedule is refused as for any task): p-1 moves an hour on.
	do := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != http.StatusAccepted {
			t.Fatalf("%s %s: %v %v", method, path, res, err)
		}
		res.Body.Close()
	}
	do("PATCH", "/v1/tasks/"+e.Run+"-p-1", `{"after":"1h"}`)
	e.Produce(ctx, spread(e, expiring, "x", sz.expiring, start, 2*time.Second,
		kafka.Header{Key: payload.HeaderExpireAfter, Value: []byte(sz.expireAfter.String())}))
	e.Produce(ctx, spread(e, other, "o", sz.other, start, 2*time.Second))
	e2etest.WaitFor(t, 90*time.Second, "other topic delivered", func() bool { return outO.Len() >= 2*sz.other })
	during99 := p99(outO.Snapshot()[sz.other:])
	t.Logf("other topic p99 lateness: %v beside a topic that runs, %v beside the paused topics", base99, during99)
	// A paused topic that held the others back would hold them for its
	// pause (8 s, 20 s); the bound leaves room for a loaded machine's
	// noise, not for that.
	if !sz.figuresOnly && during99 > base99*2+2*time.Second {
		t.Errorf("other topic p99 %v beside the paused topics, %v without", during99, base99)
	}
	// An expiring task that a loaded scanner reaches more than its
	// expire-after late goes to delay-failed at once instead of being
	// held: it counts as held here, and the checks below still want every
	// one of them in delay-failed and none delivered.
	e2etest.WaitFor(t, 90*time.Second, "all paused tasks held", func() bool {
		ts := call("GET", "/v1/topics", "")
		return held(ts, paused) == int64(sz.paused-1) &&
			held(ts, expiring)+int64(len(expired(failed.Snapshot(), expiring))) == int64(sz.expiring)
	})
	// A cancel works on a held task: p-0 is not delivered on resume.
	do("DELETE", "/v1/tasks/"+e.Run+"-p-0", "")
	time.Sleep(time.Until(pausedAt.Add(sz.pause)))
	if n, x := outP.Len(), outX.Len(); n != 0 || x != 0 {
		t.Fatalf("delivered while paused: %d and %d", n, x)
	}
	call("POST", "/v1/topics/"+paused+"/resume", "")
	call("POST", "/v1/topics/"+expiring+"/resume", "")
	t.Logf("resumed after %v", time.Since(pausedAt).Round(time.Millisecond))

	// The rate-limited burst, meanwhile: due at once (over 0.5 s).
	call("PUT", "/v1/topics/"+limited+"/rate", fmt.Sprintf(`{"per_second":%d}`, sz.rate))
	burstAt := time.Now().Add(4 * time.Second)
	e.Produce(ctx, spread(e, limited, "l", sz.burst, burstAt, 500*time.Millisecond))

	e2etest.WaitFor(t, 120*time.Second, "held tasks delivered after resume", func() bool { return outP.Len() >= sz.paused-2 })
	e2etest.WaitFor(t, 120*time.Second, "expired tasks in delay-failed", func() bool {
		return len(expired(failed.Snapshot(), expiring)) >= sz.expiring
	})
	want := float64(sz.burst-sz.rate/topicctl.Burst) / float64(sz.rate)
	// At its rate unless the machine is slower: a round releases at most
	// the bucket (a quarter second's worth), however long it took. In
	// embedded mode (figuresOnly) the whole stack runs in the test process
	// beside the suite: a CI run saw no delivery for 63 s after 558 of
	// 1,000 (not diagnosed), so it is given 3 minutes without progress.
	stall := time.Duration(want+60) * time.Second
	if sz.figuresOnly {
		stall = 3 * time.Minute
	}
	e2etest.WaitProgress(t, stall, "rate-limited burst delivered", sz.burst, outL.Len)
	time.Sleep(2 * time.Second) // duplicates and strays show up here

	checkOnceInOrder(t, "resumed", outP.Snapshot(), sz.paused-2)
	for _, r := range outP.Snapshot() {
		if id := e2etest.Header(r.Msg, payload.HeaderID); id == e.Run+"-p-0" || id == e.Run+"-p-1" {
			t.Errorf("%s, cancelled or rescheduled while held, was delivered", id)
		}
	}
	if n := outX.Len(); n != 0 {
		t.Errorf("%d expired tasks delivered", n)
	}
	if n := len(expired(failed.Snapshot(), expiring)); n != sz.expiring {
		t.Errorf("%d expired tasks in delay-failed, want %d", n, sz.expiring)
	}
	ls := outL.Snapshot()
	checkOnceInOrder(t, "rate-limited", ls, sz.burst)
	if sz.figuresOnly {
		if len(ls) > 1 {
			t.Logf("%d tasks at %d/s delivered over %.2f s (figures only)", len(ls), sz.rate, ls[len(ls)-1].Msg.Time.Sub(ls[0].Msg.Time).Seconds())
		}
		return
	}
	checkRate(t, ls, sz.rate, want)
}

// checkRate checks the delivery times of a rate-limited burst, second by
// second: no second holds more than the rate plus the bucket (a quarter
// of it) and a margin for the write's timestamps, the busiest second
// reaches 80 % of the rate, and the whole burst takes at least what the
// rate allows after the bucket (want: 9.75 s for 5,000 at 500/s). It may
// take longer by however long the scanners took to hold the burst: the
// releaser never overtakes a task due earlier that a step has not held
// yet (under load, seconds), and a bucket does not save what it could not
// spend meanwhile.
func checkRate(t *testing.T, rs []e2etest.Received, rate int, want float64) {
	t.Helper()
	times := make([]time.Time, len(rs))
	for i, r := range rs {
		times[i] = r.Msg.Time
	}
	slices.SortFunc(times, time.Time.Compare)
	peak := 0
	for i, j := 0, 0; i < len(times); i++ {
		for times[i].Sub(times[j]) >= time.Second {
			j++
		}
		peak = max(peak, i-j+1)
	}
	span := times[len(times)-1].Sub(times[0]).Seconds()
	t.Logf("%d tasks at %d/s delivered over %.2f s (at least %.2f s), at most %d in one second",
		len(times), rate, span, want-0.75, peak)
	if span < want-0.75 {
		t.Errorf("burst went out over %.2f s, faster than %d/s allows (%.2f s)", span, rate, want)
	}
	if hi := rate + rate/topicctl.Burst + rate/4; peak > hi {
		t.Errorf("%d delivered within one second, want at most %d", peak, hi)
	}
	if lo := rate * 8 / 10; peak < lo {
		t.Errorf("at most %d delivered in any second, want the rate (%d/s) reached", peak, rate)
	}
}

// spread returns n input messages for topic due from start over d.
func spread(e *e2etest.Env, topic, name string, n int, start time.Time, d time.Duration, extra ...kafka.Header) []kafka.Message {
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		at := start.Add(d * time.Duration(i) / time.Duration(n))
		msgs[i] = kafka.Message{
			Key: []byte(strconv.Itoa(i)),
			Headers: append([]kafka.Header{
				{Key: payload.HeaderTopic, Value: []byte(topic)},
				{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(at.UnixMilli(), 10))},
				{Key: payload.HeaderID, Value: []byte(e.Run + "-" + name + "-" + strconv.Itoa(i))},
			}, extra...),
		}
	}
	return msgs
}

// p99 is the 99th percentile of delivery time (record time) minus due time.
func p99(rs []e2etest.Received) time.Duration {
	ls := make([]time.Duration, len(rs))
	for i, r := range rs {
		at, _ := time.Parse(time.RFC3339Nano, e2etest.Header(r.Msg, payload.HeaderAt))
		ls[i] = r.Msg.Time.Sub(at)
	}
	slices.Sort(ls)
	return e2etest.Percentile(ls, 0.99)
}

func held(m map[string]any, topic string) int64 {
	ts, _ := m["topics"].([]any)
	for _, x := range ts {
		if t, _ := x.(map[string]any); t["topic"] == topic {
			n, _ := t["held"].(float64)
			return int64(n)
		}
	}
	return -1
}

// expired returns the delay-failed messages of topic with reason expired.
func expired(rs []e2etest.Received, topic string) []e2etest.Received {
	var out []e2etest.Received
	for _, r := range rs {
		if e2etest.Header(r.Msg, payload.HeaderTopic) == topic && e2etest.Header(r.Msg, payload.HeaderError) == scanner.ReasonExpired {
			out = append(out, r)
		}
	}
	return out
}

// checkOnceInOrder checks that rs holds n distinct tasks, each once, and
// that their record times follow their due times: ordered by record time
// (then due time), the due times never go down.
func checkOnceInOrder(t *testing.T, what string, rs []e2etest.Received, n int) {
	t.Helper()
	ids := make(map[string]int)
	for _, r := range rs {
		ids[e2etest.Header(r.Msg, payload.HeaderID)]++
	}
	if len(ids) != n || len(rs) != n {
		t.Errorf("%s: %d messages of %d tasks, want %d once each", what, len(rs), len(ids), n)
	}
	type rec struct {
		sent time.Time
		due  string
	}
	recs := make([]rec, len(rs))
	for i, r := range rs {
		recs[i] = rec{r.Msg.Time, e2etest.Header(r.Msg, payload.HeaderAt)}
	}
	slices.SortFunc(recs, func(a, b rec) int {
		return cmp.Or(a.sent.Compare(b.sent), strings.Compare(a.due, b.due))
	})
	for i := 1; i < len(recs); i++ {
		if recs[i].due < recs[i-1].due {
			t.Errorf("%s: due %s delivered at %v after due %s at %v", what, recs[i].due, recs[i].sent, recs[i-1].due, recs[i-1].sent)
			return
		}
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// TestPendingCounts drives tasks on the real stack through every way out
// of "pending" (issue 36): submits, cancels by id and due time after and
// before their task, cancels by id alone after and overtaking their task,
// a reschedule, a replace, a replace then cancelled by id, deliveries,
// and expiries (a task's delay-expire-after, and a topic's expire-after
// set through the API). Then the four places a user reads the pending
// count must each equal the ground truth, the tasks still pending:
// delayq_pending_tasks (delayd's /metrics), `delayctl backlog --json`,
// the console's Pending card (/ui/api/backlog's total, which the card
// shows) and GET /v1/tasks?state=pending; and GET /v1/tasks/{id} must
// give each task its state.
func TestPendingCounts(t *testing.T) {
	e := newEnv(t)
	apiAddr := e2etest.FreePort(t)
	d := e.Start("counts", "--roles", "ingest,dispatcher,scanner,api", "--api", apiAddr)
	runPendingCounts(t, e, apiAddr, d.HTTP, []string{"--redis", e.Redis, "--prefix", e.Run})
}

// TestEmbeddedPendingCounts: TestPendingCounts on `delayd --embedded`.
func TestEmbeddedPendingCounts(t *testing.T) {
	apiAddr, httpAddr := e2etest.FreePort(t), e2etest.FreePort(t)
	e := embeddedEnv(t, func(c *daemon.Config) {
		c.Roles = append(slices.Clone(daemon.AllRoles), daemon.RoleAPI)
		c.API, c.HTTP, c.Console = apiAddr, httpAddr, true
	})
	runPendingCounts(t, e, apiAddr, httpAddr, []string{"--redis", e.Redis})
}

func runPendingCounts(t *testing.T, e *e2etest.Env, apiAddr, httpAddr string, ctlFlags []string) {
	ctx := context.Background()
	topic, expiring := e.Topic("counts"), e.Topic("counts-exp")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	get := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	e2etest.WaitFor(t, 30*time.Second, "the API to listen", func() bool {
		res, err := http.Get("http://" + apiAddr + "/v1/openapi.yaml")
		if err == nil {
			res.Body.Close()
		}
		return err == nil
	})
	// The expiring topic's default: 1 s, set through the API.
	req, _ := http.NewRequest("PUT", "http://"+apiAddr+"/v1/topics/"+expiring+"/expire-after", strings.NewReader(`{"expire_after":"1s"}`))
	req.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode/100 != 2 {
		t.Fatalf("PUT expire-after: %v %v", res, err)
	} else {
		res.Body.Close()
	}

	now := time.Now()
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	due := now.Add(time.Hour).Truncate(time.Millisecond)
	id := func(name string) string { return e.Run + "-" + name }
	msg := func(name string, kv ...string) kafka.Message {
		m := kafka.Message{Key: []byte(id(name)), Value: []byte(name)}
		kv = append(kv, payload.HeaderID, id(name))
		for i := 0; i+1 < len(kv); i += 2 {
			m.Headers = append(m.Headers, kafka.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return m
	}
	submit := func(name string, at time.Time, kv ...string) kafka.Message {
		return msg(name, append([]string{payload.HeaderTopic, topic, payload.HeaderAt, ms(at)}, kv...)...)
	}
	cancelAt := func(name string, at time.Time) kafka.Message {
		return msg(name, payload.HeaderOp, payload.OpCancel, payload.HeaderAt, ms(at))
	}
	cancelID := func(name string) kafka.Message { return msg(name, payload.HeaderOp, payload.OpCancel) }
	// The ground truth: each task's state once everything is handled.
	want := map[string]string{
		"p1": "pending", "p2": "pending", "p3": "pending",
		"rescheduled": "pending", "replaced": "pending",
		"cancel-after": "cancelled", "cancel-before": "cancelled",
		"cancel-id": "cancelled", "cancel-id-overtaken": "cancelled", "replaced-cancelled": "cancelled",
		"delivered-1": "delivered-or-expired", "delivered-2": "delivered-or-expired",
		"expired-own": "delivered-or-expired", "expired-topic": "delivered-or-expired",
	}
	pending := 0
	for _, s := range want {
		if s == "pending" {
			pending++
		}
	}
	state := func(name string) string {
		t.Helper()
		code, body := get("http://" + apiAddr + "/v1/tasks/" + id(name))
		if code == http.StatusNotFound {
			return "unknown"
		}
		var v struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil {
			t.Fatalf("GET /v1/tasks/%s: %d %s", id(name), code, body)
		}
		return v.State
	}
	waitState := func(name, st string) {
		t.Helper()
		e2etest.WaitFor(t, 45*time.Second, name+" "+st, func() bool { return state(name) == st })
	}

	// The tasks first; a cancel by id and due time before its task, in a
	// batch of its own: handled (its marker stored) before the task comes.
	cancels := func() float64 { return promSum(t, get, "http://"+httpAddr+"/metrics", "delayq_cancels_accepted_total") }
	e.Produce(ctx, []kafka.Message{cancelAt("cancel-before", due)})
	e2etest.WaitFor(t, 30*time.Second, "the early cancel handled", func() bool { return cancels() >= 1 })
	recorded := time.Now()
	e.Produce(ctx, []kafka.Message{
		submit("p1", due), submit("p2", due.Add(time.Second)), submit("p3", due.Add(2*time.Second)),
		submit("cancel-after", due), submit("cancel-before", due), submit("cancel-id", due),
		submit("rescheduled", due), submit("replaced", due), submit("replaced-cancelled", due),
		submit("delivered-1", now.Add(2*time.Second)), submit("delivered-2", now.Add(3*time.Second)),
		// Asked for a minute ago: over their expiry at once.
		submit("expired-own", now.Add(-time.Minute), payload.HeaderExpireAfter, "1s"),
		msg("expired-topic", payload.HeaderTopic, expiring, payload.HeaderAt, ms(now.Add(-time.Minute))),
	})
	for _, name := range []string{"p1", "cancel-after", "cancel-id", "rescheduled", "replaced", "replaced-cancelled"} {
		waitState(name, "pending")
	}
	// The ops by id, after their tasks; and a cancel by id alone that
	// overtakes its task (the task recorded first, read after it).
	e.Produce(ctx, []kafka.Message{
		cancelAt("cancel-after", due), cancelID("cancel-id"),
		msg("rescheduled", payload.HeaderOp, payload.OpReschedule, payload.HeaderAt, ms(due.Add(time.Hour))),
		msg("replaced", payload.HeaderOp, payload.OpReplace, payload.HeaderTopic, topic, payload.HeaderAt, ms(due.Add(30*time.Minute))),
		msg("replaced-cancelled", payload.HeaderOp, payload.OpReplace, payload.HeaderTopic, topic, payload.HeaderAt, ms(due.Add(40*time.Minute))),
	})
	waitState("replaced-cancelled", "pending") // the replace carried out before its cancel
	e2etest.WaitFor(t, 30*time.Second, "the replace carried out", func() bool {
		_, b := get("http://" + apiAddr + "/v1/tasks/" + id("replaced-cancelled"))
		return strings.Contains(b, `"at_ms":`+ms(due.Add(40*time.Minute)))
	})
	overtaken := cancelID("cancel-id-overtaken")
	overtaken.Time = recorded
	task := submit("cancel-id-overtaken", due)
	task.Time = recorded.Add(-time.Second)
	e.Produce(ctx, []kafka.Message{cancelID("replaced-cancelled"), overtaken, task})

	for name, st := range want {
		waitState(name, st)
	}
	e2etest.WaitFor(t, 30*time.Second, "the reschedule and the replace carried out", func() bool {
		_, a := get("http://" + apiAddr + "/v1/tasks/" + id("rescheduled"))
		_, b := get("http://" + apiAddr + "/v1/tasks/" + id("replaced"))
		return strings.Contains(a, `"at_ms":`+ms(due.Add(time.Hour))) && strings.Contains(b, `"at_ms":`+ms(due.Add(30*time.Minute)))
	})
	e2etest.WaitFor(t, 30*time.Second, "both due tasks delivered", func() bool { return out.Len() >= 2 })
	e2etest.WaitFor(t, 30*time.Second, "both expired tasks in delay-failed", func() bool {
		return len(failedOf(failed, id("expired-own"), "expired")) > 0 && len(failedOf(failed, id("expired-topic"), "expired")) > 0
	})
	for _, r := range out.Snapshot() {
		if got := e2etest.Header(r.Msg, payload.HeaderID); got != id("delivered-1") && got != id("delivered-2") {
			t.Errorf("delivered %s, want only the two due tasks", got)
		}
	}
	for _, r := range failed.Snapshot() { // nothing refused: a cancel that overtook its task is silent
		got, reason := e2etest.Header(r.Msg, payload.HeaderID), e2etest.Header(r.Msg, payload.HeaderError)
		if strings.HasPrefix(got, e.Run+"-") && (got != id("expired-own") && got != id("expired-topic") || reason != "expired") {
			t.Errorf("delay-failed has %s (%q), want only the two expired tasks", got, reason)
		}
	}

	// 1. GET /v1/tasks?state=pending, over both topics.
	listed := 0
	for _, tp := range []string{topic, expiring} {
		_, body := get("http://" + apiAddr + "/v1/tasks?state=pending&limit=1000&topic=" + tp)
		var v struct {
			Tasks []struct{ ID string } `json:"tasks"`
			Next  string                `json:"next"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil || v.Next != "" {
			t.Fatalf("GET /v1/tasks?state=pending: %v %s", err, body)
		}
		listed += len(v.Tasks)
	}
	// 2. The console's Pending card: /ui/api/backlog's total.
	card := func() int64 {
		code, body := get("http://" + httpAddr + "/ui/api/backlog")
		var v struct {
			Total int64 `json:"total"`
		}
		if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil {
			t.Fatalf("GET /ui/api/backlog: %d %s", code, body)
		}
		return v.Total
	}
	// 3. delayctl backlog --json.
	bin := buildDelayctl(t)
	backlog := func() int64 {
		cmd := exec.Command(bin, append([]string{"backlog", "--json"}, ctlFlags...)...)
		b, err := cmd.Output()
		var v struct {
			Total int64 `json:"total"`
		}
		if err != nil || json.Unmarshal(b, &v) != nil {
			t.Fatalf("delayctl backlog --json: %v: %s", err, b)
		}
		return v.Total
	}
	// 4. delayq_pending_tasks: the dispatcher refreshes it once a minute;
	// read it after a refresh that began once all the above was seen
	// (delayq_dispatch_seconds{phase="backlog"} counts the refreshes).
	refreshes := func() float64 {
		return promSum(t, get, "http://"+httpAddr+"/metrics", `delayq_dispatch_seconds_count{phase="backlog"}`)
	}
	settled := refreshes()
	e2etest.WaitFor(t, 200*time.Second, "delayq_pending_tasks refreshed twice more", func() bool { return refreshes() >= settled+2 })
	g := promSum(t, get, "http://"+httpAddr+"/metrics", "delayq_pending_tasks")
	c, ctl := card(), backlog()
	t.Logf("pending: ground truth %d; GET /v1/tasks?state=pending %d; console card %d; delayctl backlog %d; delayq_pending_tasks %v",
		pending, listed, c, ctl, g)
	if listed != pending || c != int64(pending) || ctl != int64(pending) || g != float64(pending) {
		t.Errorf("pending counts: API %d, console %d, delayctl %d, delayq_pending_tasks %v; want the %d tasks pending", listed, c, ctl, g, pending)
	}
}

// promSum sums every series of the metric name in the Prometheus text at
// url (0 when it has none); a name with labels ({phase="backlog"}) is that
// one series.
func promSum(t *testing.T, get func(string) (int, string), url, name string) float64 {
	t.Helper()
	code, body := get(url)
	if code != 200 {
		t.Fatalf("GET %s: %d", url, code)
	}
	var sum float64
	labels := `(\{[^}]*\})?`
	if strings.Contains(name, "{") { // one series, named with its labels
		labels = ""
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + labels + ` (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(m[len(m)-1], 64)
		sum += v
	}
	return sum
}

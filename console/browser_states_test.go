package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// TestBrowserTaskStates runs `delayd --embedded` with the HTTP API and
// drives tasks into every state by id: pending, cancelled by id and due
// time after and before its task, cancelled by id alone, replaced,
// rescheduled, delivered, unknown. The console's task page (by id alone)
// must say what GET /v1/tasks/{id} says, and never "pending: yes" beside
// "cancelled: yes"; the pending counts (the console's backlog card,
// delayq_pending_tasks, delayctl backlog, GET /v1/tasks?state=pending)
// must all equal the tasks really pending. "Cancel this task" cancels the
// replaced task (by id alone). Then a read-only console shows
// none of the write controls (computed visibility, not only refused).
func TestBrowserTaskStates(t *testing.T) {
	browser := chromium(t)
	if testing.Short() {
		t.Skip("browser test: not with -short")
	}
	apiAddr := freePort(t)
	d := startDelaydWith(t, true, "--roles", "ingest,dispatcher,scanner,api", "--api", apiAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := producer.New(producer.Config{Brokers: []string{d.kafka}})
	defer w.Close()
	const business = "bs-orders"
	now := time.Now()
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	msg := func(id string, hs ...string) kafka.Message {
		m := kafka.Message{Topic: topics.Input, Key: []byte(id), Value: []byte(`{"id":"` + id + `"}`)}
		hs = append(hs, payload.HeaderID, id)
		for i := 0; i < len(hs); i += 2 {
			m.Headers = append(m.Headers, kafka.Header{Key: hs[i], Value: []byte(hs[i+1])})
		}
		return m
	}
	submit := func(id string, at time.Time) kafka.Message {
		return msg(id, payload.HeaderTopic, business, payload.HeaderAt, ms(at))
	}
	send := func(msgs ...kafka.Message) {
		t.Helper()
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	get := func(url string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+browserToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	apiState := func(id string) string {
		t.Helper()
		code, body := get("http://" + apiAddr + "/v1/tasks/" + id)
		if code == http.StatusNotFound {
			return "unknown"
		}
		var a struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil {
			t.Fatalf("GET /v1/tasks/%s: %d %s", id, code, body)
		}
		return a.State
	}
	waitState := func(id, want string) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for got := apiState(id); got != want; got = apiState(id) {
			if time.Now().After(deadline) {
				t.Fatalf("API: %s is %q, want %q", id, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	due := now.Add(10 * time.Minute).Truncate(time.Millisecond)
	// Tasks first, each stored before its op.
	send(submit("bs-pending", due), submit("bs-cancel-after", due), submit("bs-cancel-id", due),
		submit("bs-replaced", due), submit("bs-rescheduled", due), submit("bs-delivered", now.Add(2*time.Second)))
	for _, id := range []string{"bs-pending", "bs-cancel-after", "bs-cancel-id", "bs-replaced", "bs-rescheduled"} {
		waitState(id, "pending")
	}
	// A cancel by id and due time before its task: same key, same
	// partition, the cancel first; the pending count of cancels says when
	// ingest has handled it, so the task comes in another batch.
	cancels := func() float64 { return metric(t, get, "http://"+d.http+"/metrics", `delayq_cancels_accepted_total`) }
	send(msg("bs-cancel-before", payload.HeaderOp, payload.OpCancel, payload.HeaderAt, ms(due)))
	waitFor(t, "the first cancel handled", func() bool { return cancels() >= 1 })
	send(submit("bs-cancel-before", due),
		msg("bs-cancel-after", payload.HeaderOp, payload.OpCancel, payload.HeaderAt, ms(due)),
		msg("bs-cancel-id", payload.HeaderOp, payload.OpCancel),
		msg("bs-replaced", payload.HeaderOp, payload.OpReplace, payload.HeaderTopic, business, payload.HeaderAt, ms(due.Add(time.Minute))),
		msg("bs-rescheduled", payload.HeaderOp, payload.OpReschedule, payload.HeaderAt, ms(due.Add(2*time.Minute))))
	want := map[string]string{
		"bs-pending": "pending", "bs-replaced": "pending", "bs-rescheduled": "pending",
		"bs-cancel-after": "cancelled", "bs-cancel-before": "cancelled", "bs-cancel-id": "cancelled",
		"bs-delivered": "delivered-or-expired", "bs-never": "unknown",
	}
	for id, st := range want {
		waitState(id, st)
	}
	waitFor(t, "the reschedule and the replace carried out", func() bool {
		_, a := get("http://" + apiAddr + "/v1/tasks/bs-rescheduled")
		_, b := get("http://" + apiAddr + "/v1/tasks/bs-replaced")
		return strings.Contains(a, due.Add(2*time.Minute).UTC().Format("15:04:05")) && strings.Contains(b, due.Add(time.Minute).UTC().Format("15:04:05"))
	})
	const pending = 3 // bs-pending, bs-replaced, bs-rescheduled

	// The API's list of pending tasks.
	waitFor(t, "GET /v1/tasks?state=pending lists 3", func() bool {
		_, body := get("http://" + apiAddr + "/v1/tasks?state=pending&topic=" + business)
		var v struct {
			Tasks []struct{ ID string } `json:"tasks"`
		}
		return json.Unmarshal([]byte(body), &v) == nil && len(v.Tasks) == pending
	})
	// delayq_pending_tasks: the dispatcher refreshes it once a minute.
	waitForWithin(t, 100*time.Second, "delayq_pending_tasks sums to 3", func() bool {
		return metric(t, get, "http://"+d.http+"/metrics", `delayq_pending_tasks`) == pending
	})
	// delayctl backlog, against the embedded Redis.
	bin := filepath.Join(t.TempDir(), "delayctl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/delayq/delayq/cmd/delayctl").CombinedOutput(); err != nil {
		t.Fatalf("go build delayctl: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "backlog", "--redis", d.redis, "--json").Output()
	var backlog struct {
		Total int64 `json:"total"`
	}
	if err != nil || json.Unmarshal(out, &backlog) != nil || backlog.Total != pending {
		t.Errorf("delayctl backlog --json: total %d (%v), want %d: %s", backlog.Total, err, pending, out)
	}

	// --- the browser ---------------------------------------------------
	b := newDriver(ctx, t, browser, d)
	b.open("/")
	b.run(chromedp.SendKeys(chromedp.ID("token"), browserToken))
	b.waitText("#backlog-total", fmt.Sprint(pending))
	b.waitEval(`document.getElementById('rate-accepted').textContent !== '–'`, "true")
	for id, st := range want {
		b.open("/ui/#/task?id=" + id)
		b.waitText("#task-state", st)
		if st == "unknown" {
			continue
		}
		b.waitText("#task-title", id)
		yes := map[bool]string{true: "yes", false: "no"}
		b.waitText(`[data-field="pending"]`, yes[st == "pending"])
		b.waitText(`[data-field="cancelled"]`, yes[st == "cancelled"])
		if st == "pending" {
			b.waitEval(`document.querySelector('[data-field="payload"] pre').textContent`, `{"id":"`+id+`"}`)
		}
	}
	b.open("/ui/#/tasks")
	b.waitEval(`document.getElementById('tasks-limit').value`, "100")

	// "Cancel this task" on the replaced task cancels it: its row is the
	// replace's (a version id), which a cancel by id and due time never
	// names, so the console cancels it by id alone and says so.
	b.open("/ui/#/task?id=bs-replaced")
	b.waitText("#task-state", "pending")
	b.waitEval(`document.getElementById('task-cancel').disabled`, "false")
	b.waitEval(`(window.confirm = () => true, 'accepting')`, "accepting")
	b.run(chromedp.Click(chromedp.ID("task-cancel")))
	b.waitEval(`document.getElementById('task-cancel-result').textContent.startsWith('cancel by id alone sent')`, "true")
	waitState("bs-replaced", "cancelled")
	b.waitText("#task-state", "cancelled")
	b.waitText(`[data-field="pending"]`, "no")

	// A read-only console: the write controls are not shown at all.
	ro := startDelaydWith(t, false)
	send2 := producer.New(producer.Config{Brokers: []string{ro.kafka}})
	defer send2.Close()
	if err := send2.WriteMessages(ctx, kafka.Message{Topic: topics.Input, Key: []byte("ro"), Headers: []kafka.Header{
		{Key: payload.HeaderTopic, Value: []byte(business)}, {Key: payload.HeaderID, Value: []byte("bs-ro")},
		{Key: payload.HeaderAt, Value: []byte(ms(due))}}}); err != nil {
		t.Fatal(err)
	}
	r := newDriver(ctx, t, browser, ro)
	r.open("/")
	r.run(chromedp.SendKeys(chromedp.ID("token"), browserToken))
	r.waitText("#mode", "read-only")
	visible := func(sel string) string {
		return `(() => { const e = document.querySelector('` + sel + `'); return !!e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden' })()`
	}
	r.open("/ui/#/task?id=bs-ro")
	r.waitText("#task-state", "pending")
	r.waitEval(visible("#task-cancel"), "false")
	r.waitEval(visible("#task-actions"), "false")
	r.open("/ui/#/topics")
	r.waitEval(`document.getElementById('page-topics').hidden`, "false")
	for _, sel := range []string{"#topics-pause", "#topics-resume", "#topics-set-rate", "#topics-form"} {
		r.waitEval(visible(sel), "false")
	}
	r.open("/ui/#/failed")
	r.waitEval(visible("#failed-replay"), "false")
}

// newDriver starts a headless Chromium on delayd d's console.
func newDriver(ctx context.Context, t *testing.T, browser string, d delayd) *driver {
	t.Helper()
	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1360, 1000))...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", browser, err)
	}
	return &driver{t: t, ctx: bctx, base: "http://" + d.http}
}

// metric sums every series of the metric name in the Prometheus text at
// url.
func metric(t *testing.T, get func(string) (int, string), url, name string) float64 {
	t.Helper()
	code, body := get(url)
	if code != 200 {
		t.Fatalf("GET %s: %d", url, code)
	}
	var sum float64
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		sum += v
	}
	return sum
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	waitForWithin(t, 45*time.Second, what, ok)
}

func waitForWithin(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/failed"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

const browserToken = "browser-test-token-0123456789"

// TestBrowser runs `delayd --embedded --console-write` as a process on free
// ports, submits tasks and bad messages with kafka-go, and drives the
// console in headless Chromium (Debian's chromium, through chromedp):
// every page shows the figures submitted, a task cancelled through the UI
// is not delivered, and a failed message replayed through the UI is. It
// writes a screenshot of each page to $DELAYQ_SCREENSHOTS (default: the
// test's temp dir).
func TestBrowser(t *testing.T) {
	browser := chromium(t)
	if testing.Short() {
		t.Skip("browser test: not with -short")
	}
	d := startDelayd(t)
	shots := os.Getenv("DELAYQ_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// --- what the operator will look at -------------------------------
	now := time.Now()
	w := producer.New(producer.Config{Brokers: []string{d.kafka}})
	defer w.Close()
	const business = "bt-orders"
	var msgs []kafka.Message
	pending := map[string]time.Time{} // what stays pending while the pages are checked
	task := func(id string, at time.Time) kafka.Message {
		return kafka.Message{Topic: topics.Input, Key: []byte(id), Value: []byte(`{"order":"` + id + `"}`), Headers: []kafka.Header{
			{Key: payload.HeaderTopic, Value: []byte(business)}, {Key: payload.HeaderID, Value: []byte(id)},
			{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(at.UnixMilli(), 10))}, {Key: "trace", Value: []byte("browser-test")},
		}}
	}
	add := func(id string, at time.Time) {
		msgs = append(msgs, task(id, at))
		pending[id] = at
	}
	minute := now.Truncate(time.Minute)
	for m := 3; m < 60; m++ { // the next hour by minute: a ramp and a spike
		n := 1 + m/6
		if m == 30 {
			n = 40
		}
		for i := range n {
			add(fmt.Sprintf("bt-m%02d-%02d", m, i), minute.Add(time.Duration(m)*time.Minute+time.Duration(i)*time.Second))
		}
	}
	noon := time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, time.UTC)
	for d, n := range map[int]int{1: 30, 2: 55, 5: 20, 12: 8, 29: 3} { // day offset -> tasks
		for i := range n {
			add(fmt.Sprintf("bt-d%02d-%03d", d, i), noon.AddDate(0, 0, d).Add(time.Duration(i)*time.Minute))
		}
	}
	for i := range 2 { // at the end of --max-delay (720h): past the day chart
		add(fmt.Sprintf("bt-max-%d", i), now.Add(720*time.Hour-time.Duration(i+1)*time.Minute))
	}
	cancelAt := now.Add(40 * time.Second).Truncate(time.Millisecond)
	add("bt-cancel-me", cancelAt)
	msgs = append(msgs, task("bt-deliver-me", now.Add(3*time.Second)))
	accepted := len(msgs)
	// The charts' figures, from the due times submitted.
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	byMinute, byDay, inHour, later := map[int64]int{}, map[int64]int{}, 0, 0
	for _, at := range pending {
		if at.Before(minute.Add(time.Hour)) {
			byMinute[at.Truncate(time.Minute).UnixMilli()]++
			inHour++
		}
		if d := int(at.Sub(today) / (24 * time.Hour)); d < 30 {
			byDay[today.AddDate(0, 0, d).UnixMilli()]++
		} else {
			later++
		}
	}
	bad := []kafka.Message{
		{Topic: topics.Input, Key: []byte("bad-1"), Value: []byte("no topic"), Headers: []kafka.Header{{Key: payload.HeaderAfter, Value: []byte("5s")}}},
		{Topic: topics.Input, Key: []byte("bad-2"), Value: []byte("bad after"), Headers: []kafka.Header{{Key: payload.HeaderTopic, Value: []byte(business)}, {Key: payload.HeaderAfter, Value: []byte("soon")}}},
		{Topic: topics.Input, Key: []byte("bad-3"), Value: []byte("internal"), Headers: []kafka.Header{{Key: payload.HeaderTopic, Value: []byte(topics.Scan)}, {Key: payload.HeaderAfter, Value: []byte("5s")}}},
	}
	// A valid task that failed for a reason since fixed: the replay target.
	replayable := task("bt-replay-me", now.Add(2*time.Second))
	replayable.Topic = topics.Failed
	replayable.Headers = append(replayable.Headers, kafka.Header{Key: payload.HeaderError, Value: []byte("store: simulated outage, since fixed")},
		kafka.Header{Key: failed.HeaderSourceTopic, Value: []byte(topics.Input)}, kafka.Header{Key: failed.HeaderSourcePartition, Value: []byte("0")},
		kafka.Header{Key: failed.HeaderSourceOffset, Value: []byte("7")})
	if err := w.WriteMessages(ctx, append(append(msgs, bad...), replayable)...); err != nil {
		t.Fatal(err)
	}
	out := collect(ctx, t, d.kafka, business)

	// --- the browser --------------------------------------------------
	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1360, 1000))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser, with no timeout of its own
		t.Fatalf("start %s: %v", browser, err)
	}
	go func() { // accepts the confirm() every action asks
		for _, err := range chromedp.Events(bctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	b := &driver{t: t, ctx: bctx, base: "http://" + d.http}

	// Every read needs the token (DELAYQ_CONSOLE_TOKEN is set): the page
	// asks for it, then shows what it read with it.
	b.open("/")
	b.waitEval(`!document.getElementById('token-box').hidden && document.getElementById('banner').textContent.includes('console token')`, "true")
	b.run(chromedp.SendKeys(chromedp.ID("token"), browserToken))

	// Overview: totals, dependencies, backlog by minute and by day.
	b.waitText("#mode", "write")
	b.waitText("#total-accepted", fmt.Sprint(accepted))
	b.waitText("#total-failed", fmt.Sprint(len(bad)))
	b.waitText("#total-delivered", "1") // bt-deliver-me, due in 3 s
	b.waitEval(`document.querySelectorAll('#deps li[data-up="true"]').length`, "3")
	b.waitText("#backlog-total", fmt.Sprint(len(pending)))
	b.waitText("#backlog-later", fmt.Sprint(later))
	b.waitEval(`[...document.querySelectorAll('#chart-minutes rect')].reduce((a, r) => a + Number(r.dataset.pending), 0)`, fmt.Sprint(inHour))
	for start, n := range byMinute {
		b.waitEval(`document.querySelector('#chart-minutes rect[data-start="`+fmt.Sprint(start)+`"]').dataset.pending`, fmt.Sprint(n))
	}
	for start, n := range byDay {
		b.waitEval(`document.querySelector('#chart-days rect[data-start="`+fmt.Sprint(start)+`"]').dataset.pending`, fmt.Sprint(n))
	}
	b.waitEval(`document.getElementById('lateness-p99').textContent !== '–'`, "true")
	b.screenshot(filepath.Join(shots, "console-overview.png"))
	b.narrowAndDark(shots)

	// Tasks page: search by topic and key prefix, page through, open one.
	b.searchTasks(business, "bt-m30-", 40, shots)

	// Task page: the row, pending; cancel through the UI; cancelled.
	b.open("/ui/#/task?id=bt-cancel-me&at=" + cancelAt.UTC().Format(time.RFC3339Nano))
	b.waitText("#task-state", "pending")
	b.waitEval(`document.querySelector('[data-field="topic"]').textContent`, business)
	b.waitEval(`document.querySelector('[data-field="payload"] pre').textContent`, `{"order":"bt-cancel-me"}`)
	b.run(chromedp.Click(chromedp.ID("task-cancel"))) // the token typed on the overview is kept for the tab
	b.waitText("#task-state", "cancelled")
	b.waitText("#task-cancel-result", "cancel sent")
	b.screenshot(filepath.Join(shots, "console-task.png"))

	// An unknown task says so.
	b.open("/ui/#/task?id=bt-never&at=" + cancelAt.UTC().Format(time.RFC3339Nano))
	b.waitText("#task-state", "unknown")

	// Failed page: the three contract failures and the simulated outage,
	// with reasons; replay the outage's message through the UI.
	b.open("/ui/#/failed")
	b.waitEval(`document.getElementById('failed-count').dataset.count`, fmt.Sprint(len(bad)+1))
	b.waitEval(`[...document.querySelectorAll('#failed-table td.reason')].map(td => td.textContent).join('|').includes('delay-after')`, "true")
	b.waitEval(`[...document.querySelectorAll('#failed-table td.reason')].map(td => td.textContent).join('|').includes('simulated outage')`, "true")
	b.run(chromedp.Click(chromedp.Search(`//tr[td[contains(., "simulated outage")]]//input`)),
		chromedp.Click(chromedp.ID("failed-replay")))
	b.waitText("#failed-replay-result", "1 replayed")
	b.screenshot(filepath.Join(shots, "console-failed.png"))

	// Filter by reason.
	b.open("/ui/#/failed?reason=delay-after")
	b.waitEval(`document.getElementById('failed-count').dataset.count`, "1")

	// After bt-cancel-me's due time: it was not delivered, the replayed
	// task and bt-deliver-me were, and the overview counts the cancel.
	got := out.await(t, time.Until(cancelAt)+15*time.Second, "bt-replay-me", "bt-deliver-me")
	if n := got["bt-cancel-me"]; n != 0 {
		t.Errorf("bt-cancel-me, cancelled through the console, was delivered %d times", n)
	}
	b.open("/")
	b.waitText("#total-cancelled", "1")
	b.waitText("#total-delivered", "2")
	t.Logf("screenshots in %s", shots)
}

// chromium finds Debian's chromium; missing, it fails under CI=true and
// skips otherwise, naming the script that installs it.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (CI=true, the browser test never skips): deploy/local/tools installs it")
	}
	t.Skip("chromium is not installed: run deploy/local/tools (make test does)")
	return ""
}

// delayd is a running `delayd --embedded` process.
type delayd struct{ kafka, http, redis string }

func startDelayd(t *testing.T) delayd { t.Helper(); return startDelaydWith(t, true) }

// startDelaydWith starts `delayd --embedded`, with --console-write when
// write, and the extra arguments.
func startDelaydWith(t *testing.T, write bool, extra ...string) delayd {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "delayd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/delayq/delayq/cmd/delayd").CombinedOutput(); err != nil {
		t.Fatalf("go build delayd: %v\n%s", err, out)
	}
	d := delayd{kafka: freePort(t), http: freePort(t)}
	d.redis = freePort(t)
	args := []string{"--embedded", "--brokers", d.kafka, "--redis", d.redis, "--http", d.http, "--partitions", "2", "--log-format", "json"}
	if write {
		args = append(args, "--console-write")
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Env = append(os.Environ(), "DELAYQ_CONSOLE_TOKEN="+browserToken)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	done := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("delayd output:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get("http://" + d.http + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return d
			}
		}
		select {
		case <-done:
			t.Fatalf("delayd exited: %v\n%s", waitErr, logs.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("delayd not ready in 60s\n%s", logs.String())
	return d
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// driver runs chromedp actions and fails the test with what it waited for.
type driver struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func (b *driver) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

func (b *driver) open(path string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.base + path))
}

// waitEval waits until the JavaScript expression js evaluates to want
// (compared as text).
func (b *driver) waitEval(js, want string) {
	b.t.Helper()
	var got string
	deadline := time.Now().Add(45 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { try { return String(`+js+`) } catch (e) { return 'error: ' + e } })()`))
		cancel()
		got = v
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: %s = %q, want %q (err %v)", js, got, want, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (b *driver) waitText(sel, want string) {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	b.waitEval(`(document.querySelector(`+string(q)+`) || {}).textContent`, want)
}

func (b *driver) screenshot(path string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// deliveries counts what reaches a business topic, by delay-id.
type deliveries struct {
	mu  sync.Mutex
	ids map[string]int
}

func collect(ctx context.Context, t *testing.T, broker, topic string) *deliveries {
	d := &deliveries{ids: map[string]int{}}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{broker}, GroupID: "browser-test", GroupTopics: []string{topic},
		StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond, CommitInterval: time.Second})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := r.ReadMessage(rctx)
			if err != nil {
				return
			}
			for _, h := range m.Headers {
				if h.Key == payload.HeaderID {
					d.mu.Lock()
					d.ids[string(h.Value)]++
					d.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; r.Close() })
	return d
}

// await waits until every id was delivered, or fails; it then returns the
// counts by id.
func (d *deliveries) await(t *testing.T, within time.Duration, ids ...string) map[string]int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		d.mu.Lock()
		missing := []string{}
		for _, id := range ids {
			if d.ids[id] == 0 {
				missing = append(missing, id)
			}
		}
		snapshot := make(map[string]int, len(d.ids))
		for k, v := range d.ids {
			snapshot[k] = v
		}
		d.mu.Unlock()
		if len(missing) == 0 && time.Now().After(deadline) {
			return snapshot
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered within %v: %s", within, strings.Join(missing, ", "))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

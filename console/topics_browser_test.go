package console_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// TestBrowserTopics drives the topics page in headless Chromium against
// `delayd --embedded --console-write`: a topic paused through the page
// holds its due tasks (the page counts them, nothing is delivered, another
// topic is), resumed through the page it delivers them, and a rate set
// through the page shows in its row.
func TestBrowserTopics(t *testing.T) {
	browser := chromium(t)
	if testing.Short() {
		t.Skip("browser test: not with -short")
	}
	d := startDelayd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const paused, free = "bt-paused", "bt-free"

	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1360, 1000))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", browser, err)
	}
	go func() { // accepts the confirm() of a pause
		for _, err := range chromedp.Events(bctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	b := &driver{t: t, ctx: bctx, base: "http://" + d.http}
	b.open("/ui/#/topics")
	b.waitEval(`!document.getElementById('token-box').hidden`, "true")
	b.run(chromedp.SendKeys(chromedp.ID("token"), browserToken))
	b.waitText("#mode", "write")

	// Pause through the page.
	b.run(chromedp.SendKeys(chromedp.ID("topics-topic"), paused), chromedp.Click(chromedp.ID("topics-pause")))
	row := `document.querySelector('#topics-table tr[data-topic="` + paused + `"]')`
	b.waitEval(row+`.querySelector('td.state').dataset.state`, "paused")

	out := collect(ctx, t, d.kafka, paused)
	outFree := collect(ctx, t, d.kafka, free)
	w := producer.New(producer.Config{Brokers: []string{d.kafka}})
	defer w.Close()
	time.Sleep(500 * time.Millisecond) // past the scanner's control cache
	due := time.Now().Add(2 * time.Second)
	var msgs []kafka.Message
	for i, topic := range []string{paused, paused, paused, free} {
		msgs = append(msgs, kafka.Message{Topic: topics.Input, Value: []byte("v"), Headers: []kafka.Header{
			{Key: payload.HeaderTopic, Value: []byte(topic)}, {Key: payload.HeaderID, Value: []byte("bt-t" + strconv.Itoa(i))},
			{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(due.UnixMilli(), 10))},
		}})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	outFree.await(t, 6*time.Second, "bt-t3") // waits all of it: the due time and a margin
	b.waitEval(row+`.querySelector('td.held').textContent`, "3")
	if got := out.await(t, 0); len(got) != 0 {
		t.Fatalf("delivered while paused: %v", got)
	}
	b.screenshot(filepath.Join(t.TempDir(), "console-topics.png"))

	// Resume through the row's button: all three are delivered.
	b.run(chromedp.Click(chromedp.CSS(`#topics-table tr[data-topic="` + paused + `"] button`)))
	got := out.await(t, 5*time.Second, "bt-t0", "bt-t1", "bt-t2")
	for id, n := range got {
		if n != 1 {
			t.Errorf("%s delivered %d times after resume", id, n)
		}
	}
	// Resumed and empty, the topic has no control left: its row goes.
	b.waitEval(row, "null")

	// A rate set through the page (the topic is still in its box) shows
	// in the row.
	b.run(chromedp.SendKeys(chromedp.ID("topics-rate"), "250"), chromedp.Click(chromedp.ID("topics-set-rate")))
	b.waitText("#topics-result", "rate bt-paused: done")
	b.waitEval(row+`.querySelector('td.rate').textContent`, "250")
	b.waitEval(row+`.querySelector('td.state').dataset.state`, "limited")
}

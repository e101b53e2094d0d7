package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// TestCancelledID follows the docs' o-42 on the real stack: docs/api.md
// (POST, GET, PATCH, PUT, DELETE) then docs/ops-by-id.md (the same id
// submitted, rescheduled and cancelled with kcat's messages). The reused
// id is refused visibly: the Kafka submit goes to delay-failed with "id
// cancelled: …" and the block's end, POST answers 409 with the same end,
// GET shows the block; nothing of o-42 is delivered. A cancel by id that
// overtakes its own task (the task recorded before it, read after it)
// still cancels it without a word.
func TestCancelledID(t *testing.T) {
	e := newEnv(t)
	apiAddr := e2etest.FreePort(t)
	e.Start("api", "--roles", "ingest,dispatcher,scanner,api", "--api", apiAddr)
	runCancelledID(t, e, apiAddr, e.Run+"-o-42")
}

// TestEmbeddedCancelledID: TestCancelledID on `delayd --embedded`, with
// the docs' id itself.
func TestEmbeddedCancelledID(t *testing.T) {
	apiAddr := e2etest.FreePort(t)
	e := embeddedEnv(t, func(c *daemon.Config) {
		c.Roles = append(slices.Clone(daemon.AllRoles), daemon.RoleAPI)
		c.API = apiAddr
	})
	runCancelledID(t, e, apiAddr, "o-42")
}

func runCancelledID(t *testing.T, e *e2etest.Env, apiAddr, id string) {
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		return apiCall(t, apiAddr, method, path, body)
	}
	waitAPI(t, apiAddr)
	path := "/v1/tasks/" + id

	// docs/api.md
	if code, m := call("POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"id":%q,"after":"30m","key":%q,"value":"remind"}`, topic, id, id)); code != http.StatusCreated {
		t.Fatalf("POST: %d %v", code, m)
	}
	e2etest.WaitFor(t, 20*time.Second, id+" pending", func() bool { _, m := call("GET", path, ""); return m["state"] == "pending" })
	if code, m := call("PATCH", path, `{"after":"1h"}`); code != http.StatusAccepted {
		t.Fatalf("PATCH: %d %v", code, m)
	}
	if code, m := call("PUT", path, fmt.Sprintf(`{"topic":%q,"after":"2h","value":"remind again"}`, topic)); code != http.StatusAccepted {
		t.Fatalf("PUT: %d %v", code, m)
	}
	cancelAt := time.Now()
	if code, m := call("DELETE", path, ""); code != http.StatusAccepted || !strings.Contains(fmt.Sprint(m["rule"]), "refused") {
		t.Fatalf("DELETE: %d %v", code, m)
	}
	var got map[string]any
	e2etest.WaitFor(t, 20*time.Second, id+" cancelled by id", func() bool {
		_, got = call("GET", path, "")
		return got["state"] == "cancelled" && got["blocked_until"] != nil
	})
	untilMs := int64(got["blocked_until_ms"].(float64))
	want := cancelAt.Add(payload.DefaultCancelBlock) // delayd's defaults: --max-delay 720h, --retention 168h
	if d := time.UnixMilli(untilMs).Sub(want); d < -time.Second || d > 10*time.Second {
		t.Errorf("blocked until %v, want about %v (the cancel + --max-delay + --retention)", got["blocked_until"], want)
	}
	if !strings.Contains(fmt.Sprint(got["task"]), "the task the cancel cancelled") || got["at"] == nil {
		t.Errorf("GET after DELETE: %v, want the cancelled task's due time, labelled", got)
	}

	// docs/ops-by-id.md: the same id again, with kcat's messages.
	h := func(kv ...string) []kafka.Header {
		var hs []kafka.Header
		for i := 0; i+1 < len(kv); i += 2 {
			hs = append(hs, kafka.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return hs
	}
	ctx := context.Background()
	e.Produce(ctx, []kafka.Message{{Key: []byte(id), Value: []byte("remind"),
		Headers: h(payload.HeaderTopic, topic, payload.HeaderID, id, payload.HeaderAfter, "30m")}})
	reason := awaitFailed(t, failed, id, "submit")
	wantReason := fmt.Sprintf(`id cancelled: submit of delay-id %q refused: the id was cancelled by id alone at `, id)
	if !strings.HasPrefix(reason, wantReason) || !strings.Contains(reason, "refused until "+payload.FormatTime(untilMs)) {
		t.Errorf("delay-error %q, want %q… until %s", reason, wantReason, payload.FormatTime(untilMs))
	}
	e.Produce(ctx, []kafka.Message{{Key: []byte(id), Value: []byte("reschedule"),
		Headers: h(payload.HeaderOp, payload.OpReschedule, payload.HeaderID, id, payload.HeaderAfter, "1h")}})
	if reason := awaitFailed(t, failed, id, "reschedule"); !strings.Contains(reason, "is cancelled") {
		t.Errorf("reschedule of the cancelled id: delay-error %q", reason)
	}

	// The request: refused at once, naming the rule and the end.
	code, m := call("POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"id":%q,"after":"5s"}`, topic, id))
	end := time.UnixMilli(untilMs).UTC().Format(time.RFC3339)
	if msg, _ := m["error"].(string); code != http.StatusConflict || !strings.HasPrefix(msg, "id cancelled: ") || !strings.Contains(msg, "blocked until "+end) {
		t.Errorf("POST of the cancelled id: %d %v, want 409 with the block's end %s", code, m, end)
	}
	// The Kafka twin of that request, due in 2 s: refused, never delivered.
	e.Produce(ctx, []kafka.Message{{Key: []byte(id), Value: []byte("soon"),
		Headers: h(payload.HeaderTopic, topic, payload.HeaderID, id, payload.HeaderAfter, "2s")}})

	// A cancel by id that overtakes its task: the task, recorded first,
	// reaches ingest after the cancel; it is cancelled, not refused.
	early, kept := id+"-overtaken", id+"-kept"
	now := time.Now()
	e.Produce(ctx, []kafka.Message{
		{Key: []byte(early), Value: []byte("c"), Time: now, Headers: h(payload.HeaderOp, payload.OpCancel, payload.HeaderID, early)},
		{Key: []byte(early), Value: []byte("t"), Time: now.Add(-time.Second), Headers: h(payload.HeaderTopic, topic, payload.HeaderID, early, payload.HeaderAfter, "2s")},
		{Key: []byte(kept), Value: []byte("k"), Headers: h(payload.HeaderTopic, topic, payload.HeaderID, kept, payload.HeaderAfter, "4s")},
	})
	e2etest.WaitFor(t, 40*time.Second, kept+" delivered", func() bool { return out.Len() >= 1 })
	e2etest.WaitFor(t, 20*time.Second, "the soon submit refused", func() bool {
		return len(failedOf(failed, id, "submit")) >= 2
	})
	time.Sleep(3 * time.Second) // three more ticks: a wrong delivery shows up here
	for _, r := range out.Snapshot() {
		if d := e2etest.Header(r.Msg, payload.HeaderID); d != kept {
			t.Errorf("delivered %s (%q), want only %s", d, r.Msg.Value, kept)
		}
	}
	if f := failedOf(failed, early, ""); len(f) != 0 {
		t.Errorf("the task its cancel overtook went to delay-failed: %v", f)
	}
	if _, m := call("GET", "/v1/tasks/"+early, ""); m["state"] != "cancelled" {
		t.Errorf("GET %s: %v, want cancelled", early, m)
	}
	t.Logf("o-42 refused: %s", reason)
}

// failedOf returns the delay-error of the failed messages of id whose
// reason is about op ("" any).
func failedOf(c *e2etest.Collector, id, op string) []string {
	var out []string
	for _, r := range c.Snapshot() {
		reason := e2etest.Header(r.Msg, payload.HeaderError)
		if e2etest.Header(r.Msg, payload.HeaderID) == id && strings.Contains(reason, op) {
			out = append(out, reason)
		}
	}
	return out
}

func awaitFailed(t *testing.T, c *e2etest.Collector, id, op string) string {
	t.Helper()
	var got []string
	e2etest.WaitFor(t, 30*time.Second, op+" of "+id+" in delay-failed", func() bool {
		got = failedOf(c, id, op)
		return len(got) > 0
	})
	return got[len(got)-1]
}

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/topics"
)

// TestEmbedded runs `delayd --embedded` in-process on free ports — kfake as
// Kafka, miniredis as Redis, the in-memory store — and drives it with
// kafka-go exactly as TestPipeline drives the real stack: 1,000 tasks in the
// three time formats, cancels and malformed messages. It needs no service.
func TestEmbedded(t *testing.T) {
	e := embeddedEnv(t)
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	e2etest.WaitFor(t, 30*time.Second, "delay-input to exist", func() bool {
		return admin.Ensure(context.Background(), e.Brokers, nil, []admin.Spec{{Name: topics.Input}}) == nil
	})

	w := e.NewWorkload(topic, 1000, 50, 8*time.Second, time.Now())
	e.Submit(t.Context(), w)

	r := awaitDelivery(w.Ledger, out, 60*time.Second)
	t.Logf("TestEmbedded: %v", r)
	mustBeClean(t, r)
	checkFailed(t, w.Ledger, failed)
}

// TestEmbeddedBusyPort: a taken port is one clear error naming the flag.
func TestEmbeddedBusyPort(t *testing.T) {
	ln := e2etest.Listen(t)
	defer ln.Close()
	err := daemon.Embedded(context.Background(), daemon.Config{Brokers: []string{ln.Addr().String()}}, daemon.Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "--brokers "+ln.Addr().String()) || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("err = %v, want a one-line error naming --brokers and the busy address", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
}

// TestEmbeddedAPI: `delayd --embedded --roles ...,api` serves the HTTP API
// too, over the in-memory store: a task submitted with a plain HTTP client
// is pending, then delivered once, and GET follows it; a cancelled one is
// never delivered.
func TestEmbeddedAPI(t *testing.T) {
	apiAddr := e2etest.FreePort(t)
	e := embeddedEnv(t, func(c *daemon.Config) {
		c.Roles = append(slices.Clone(daemon.AllRoles), daemon.RoleAPI)
		c.API = apiAddr
	})
	topic := e.Topic("api")
	out := e.Collect(topic)
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		return apiCall(t, apiAddr, method, path, body)
	}
	waitAPI(t, apiAddr)
	code, m := call("POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"id":"kept","after":"3s","value":"v"}`, topic))
	if code != http.StatusCreated {
		t.Fatalf("POST kept: %d %v", code, m)
	}
	if code, m = call("POST", "/v1/tasks", fmt.Sprintf(`{"topic":%q,"id":"dropped","after":"3s"}`, topic)); code != http.StatusCreated {
		t.Fatalf("POST dropped: %d %v", code, m)
	}
	if code, m = call("DELETE", "/v1/tasks/dropped", ""); code != http.StatusAccepted {
		t.Fatalf("DELETE dropped: %d %v", code, m)
	}
	e2etest.WaitFor(t, 10*time.Second, "kept pending", func() bool {
		_, m := call("GET", "/v1/tasks/kept", "")
		return m["state"] == "pending"
	})
	e2etest.WaitFor(t, 30*time.Second, "kept delivered", func() bool { return out.Len() >= 1 })
	time.Sleep(2 * time.Second) // two more ticks: a late duplicate or the cancelled task shows up here
	if got := out.Snapshot(); len(got) != 1 || e2etest.Header(got[0].Msg, "delay-id") != "kept" || string(got[0].Msg.Value) != "v" {
		t.Fatalf("delivered %d messages, want kept once", len(got))
	}
	if _, m = call("GET", "/v1/tasks/kept", ""); m["state"] != "delivered-or-expired" {
		t.Errorf("GET kept after delivery: %v, want delivered-or-expired", m)
	}
	if _, m = call("GET", "/v1/tasks/dropped", ""); m["state"] != "cancelled" {
		t.Errorf("GET dropped: %v, want cancelled", m)
	}
}

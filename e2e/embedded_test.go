package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/topics"
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
		return topics.Ensure(context.Background(), e.Brokers, []topics.Spec{{Name: topics.Input}}) == nil
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

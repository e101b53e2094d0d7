package e2e

import (
	"context"
	"fmt"
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
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Embedded(ctx, daemon.Config{
			Brokers: []string{"127.0.0.1:0"}, Redis: "127.0.0.1:0", HTTP: "127.0.0.1:0",
			Tick: time.Second, Partitions: 4,
		}, daemon.Options{}, func(brokers, redis string) { addrs <- [2]string{brokers, redis} })
	}()
	var a [2]string
	select {
	case a = <-addrs:
	case err := <-done:
		t.Fatalf("embedded delayd exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("embedded delayd did not start in 30s")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("embedded delayd: %v", err)
		}
	}()

	e := &e2etest.Env{T: t, Stack: e2etest.Stack{Brokers: []string{a[0]}}, Run: fmt.Sprintf("emb%d", time.Now().UnixNano())}
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	e2etest.WaitFor(t, 30*time.Second, "delay-input to exist", func() bool {
		return topics.Ensure(context.Background(), e.Brokers, []topics.Spec{{Name: topics.Input}}) == nil
	})

	w := e.NewWorkload(topic, 1000, 50, 8*time.Second, time.Now())
	e.Submit(ctx, w)

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

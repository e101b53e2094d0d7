package secure

import (
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/e2e/e2etest"
)

// TestClient: the Go client with the same settings in its Config (the CA
// as a *tls.Config, SCRAM-SHA-512 as a kafka-go sasl.Mechanism), as user
// delayq: a task it submits is delivered once, one it cancels never.
func TestClient(t *testing.T) {
	e, s := stack(t)
	topic := e.Topic("biz-client")
	out := e.Collect(topic)
	s.delayd(t, e, "d0")

	c, err := delayq.New(delayq.Config{
		Brokers: []string{addr(kafkaPort)},
		TLS:     s.tlsConfig(t),
		SASL:    s.mechanism(t, "delayq"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if _, err := c.Submit(ctx, delayq.Task{ID: "client-soon", Topic: topic, After: time.Second, Value: []byte("client")}); err != nil {
		t.Fatalf("client submit: %v", err)
	}
	cancelled, err := c.Submit(ctx, delayq.Task{ID: "client-cancelled", Topic: topic, After: 3 * time.Second})
	if err != nil {
		t.Fatalf("client submit: %v", err)
	}
	if err := c.Cancel(ctx, cancelled.ID, cancelled.At); err != nil {
		t.Fatalf("client cancel: %v", err)
	}
	e2etest.WaitFor(t, 30*time.Second, "client-soon delivered", func() bool { return delivered(out, "client-soon") == 1 })
	time.Sleep(time.Until(cancelled.At) + 3*time.Second) // the cancelled task's due time and two ticks
	if n := delivered(out, "client-soon"); n != 1 {
		t.Errorf("client-soon delivered %d times, want once", n)
	}
	if n := delivered(out, "client-cancelled"); n != 0 {
		t.Errorf("cancelled client-cancelled delivered %d times", n)
	}
}

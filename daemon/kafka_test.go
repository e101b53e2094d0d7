package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/payload"
)

// TestKafkaLoginRefused: against a broker that refuses delayd's SASL login,
// delayd keeps retrying its setup (an outage to wait out, never fatal),
// /readyz names the cause in one line, and the password shows in no log
// line.
func TestKafkaLoginRefused(t *testing.T) {
	const password = "not-the-password"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "delayq", "the-password"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	mr := miniredis.RunT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	d, err := New(Config{
		Brokers: cluster.ListenAddrs(), Redis: mr.Addr(),
		Kafka: kafkaauth.Config{SASL: kafkaauth.ScramSHA512, User: "delayq", Password: password},
	}, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Store: payload.NewMemory(), Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	// kfake closes the connection on a refused login where Apache Kafka
	// answers SASL_AUTHENTICATION_FAILED first (then the line reads "kafka:
	// SASL authentication failed for user ..."; kafka/kafkaauth tests both).
	const want = `not ready: starting: create topics: kafka: create topics: kafka: the broker closed the connection`
	const cause = `(TLS off, SASL SCRAM-SHA-512 as user "delayq"), or a refused login`
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for !strings.HasPrefix(body, want) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		resp, err := http.Get("http://" + ln.Addr().String() + "/readyz")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if resp.StatusCode == http.StatusOK {
			t.Fatal("/readyz 200 with the login refused")
		}
	}
	if !strings.HasPrefix(body, want) || !strings.Contains(body, cause) || strings.Count(body, "\n") > 1 {
		t.Fatalf("/readyz = %q, want one line starting %q naming %q", body, want, cause)
	}
	// Still retrying, not given up.
	retries := func() float64 {
		mfs, err := d.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0.0
		for _, mf := range mfs {
			if mf.GetName() == "delayq_stage_retries_total" {
				for _, m := range mf.GetMetric() {
					n += m.GetCounter().GetValue()
				}
			}
		}
		return n
	}
	for retries() < 3 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if n := retries(); n < 3 {
		t.Errorf("%v retries of the setup, want it to go on retrying", n)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the login is refused, want it to keep retrying", err)
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
	if out := logs.String(); strings.Contains(out, password) || !strings.Contains(out, "or a refused login") {
		t.Errorf("logs show the password or lack the cause:\n%s", out)
	}
}

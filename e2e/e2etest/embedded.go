package e2etest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/delayq/delayq/daemon"
)

// Embedded runs `delayd --embedded` in-process (daemon.Embedded: kfake
// as Kafka, miniredis as Redis, the in-memory store) with cfg and opts
// until the test ends, and returns the addresses its Kafka and Redis
// listen on. It fails tb when delayd exits or has not started them in
// 30 s, and when delayd ends with an error.
func Embedded(tb testing.TB, cfg daemon.Config, opts daemon.Options) (brokers, redis string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Embedded(ctx, cfg, opts, func(brokers, redis string) { addrs <- [2]string{brokers, redis} })
	}()
	var a [2]string
	select {
	case a = <-addrs:
	case err := <-done:
		cancel()
		tb.Fatalf("embedded delayd exited: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		tb.Fatal("embedded delayd did not start in 30s")
	}
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("embedded delayd: %v", err)
		}
	})
	return a[0], a[1]
}

// WaitReady waits up to within for delayd's /readyz at the HTTP address
// addr to answer 200.
func WaitReady(tb testing.TB, addr string, within time.Duration) {
	tb.Helper()
	WaitFor(tb, within, "delayd at "+addr+" ready", func() bool {
		res, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

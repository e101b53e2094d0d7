package daemon

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// A delayd whose --segment differs from the layout recorded under its
// prefix refuses to start, at once, naming the flag and both values (the
// tests of every other start show a matching layout passing).
func TestLayoutMismatchRefusesStart(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	mr := miniredis.RunT(t)
	if err := mr.Set("delayq:layout", "version=1 segment=1m0s shards=256 zset-fill=127"); err != nil {
		t.Fatal(err)
	}
	d, err := New(Config{Brokers: cluster.ListenAddrs(), Redis: mr.Addr(), HTTP: "127.0.0.1:0", Segment: 30 * time.Second},
		Options{Store: payload.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = d.Run(t.Context())
	if !errors.Is(err, zset.ErrLayoutMismatch) || !strings.Contains(err.Error(), "--segment 1m0s, configured 30s") {
		t.Fatalf("Run = %v, want ErrLayoutMismatch naming --segment 1m0s and 30s", err)
	}
	t.Log(err)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("refused after %v: retried a mismatch like an outage", took)
	}
	if got, _ := mr.Get("delayq:layout"); got != "version=1 segment=1m0s shards=256 zset-fill=127" {
		t.Errorf("recorded layout changed to %q", got)
	}
}

package scanner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/delayq/delayq/internal/fence"
	"github.com/delayq/delayq/kafka/scantask"
)

// TestWorkFenced: a worker's writes check its generation's lease. A
// scanner paused past its session holds entries read before the pause;
// when it wakes its lease has lapsed, and the coordinator's answer revokes
// it: the worker produces nothing and removes nothing (the next owner
// delivers them), its scan task stays unfinished, and the refusals are
// counted. A lease renewed in time changes nothing.
func TestWorkFenced(t *testing.T) {
	tests := []struct {
		name      string
		act       func(l *fence.Lease) // at 1.5 s, after the lease lapsed at 1 s
		delivered int
	}{
		{"renewed", func(l *fence.Lease) { l.Renew(time.Now().Add(time.Hour)) }, 2},
		{"revoked", func(l *fence.Lease) { l.Revoke() }, 0},
		{"lapsed, then revoked", func(l *fence.Lease) { time.AfterFunc(2*time.Second, l.Revoke) }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, Config{})
				due := e.now.Add(2 * time.Second)
				e.put("z", tasks(2, "orders", due.UnixMilli()))
				lease := fence.NewLease()
				lease.Renew(time.Now().Add(time.Second))
				time.AfterFunc(1500*time.Millisecond, func() { tt.act(lease) })
				ctx, stop := context.WithTimeout(fence.With(context.Background(), lease), time.Minute)
				defer stop()
				// The step refused ends the worker as a stop would.
				time.AfterFunc(10*time.Second, stop)
				p := e.scan(ctx, scantask.Task{Zset: "z", Until: due.UnixMilli() + 10})

				if n := len(e.byTopic("orders")); n != tt.delivered {
					t.Fatalf("delivered %d, want %d", n, tt.delivered)
				}
				refused := value(e.s.m.fenced)
				pending := len(e.ix.pending("z"))
				if tt.delivered == 0 {
					if refused == 0 || pending != 2 {
						t.Fatalf("fenced writes %v, entries left %d; want some refused and both entries left", refused, pending)
					}
					if _, ok := p.pending(); ok {
						t.Fatal("the scan task of a fenced worker was committed")
					}
					return
				}
				if refused != 0 || pending != 0 {
					t.Fatalf("fenced writes %v, entries left %d; want none", refused, pending)
				}
			})
		})
	}
}

package ingest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/delayq/delayq/internal/fence"
)

// TestConsumeFenced: a lane's writes check its generation's lease. An
// ingester paused past its session wakes with a batch in hand and its
// lease lapsed; the coordinator's answer revokes it: the batch is not
// stored, indexed or committed (another member reads it again), and the
// refusals are counted. A lease renewed in time changes nothing.
func TestConsumeFenced(t *testing.T) {
	tests := []struct {
		name   string
		act    func(l *fence.Lease)
		stored bool
	}{
		{"renewed", func(l *fence.Lease) { l.Renew(time.Now().Add(time.Hour)) }, true},
		{"revoked", func(l *fence.Lease) { l.Revoke() }, false},
		{"lapsed, then revoked", func(l *fence.Lease) { time.AfterFunc(2*time.Second, l.Revoke) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, nil)
				lease := fence.NewLease()
				lease.Renew(time.Now().Add(time.Second))
				ctx, stop := context.WithCancel(fence.With(t.Context(), lease))
				defer stop()
				gctx, end := context.WithCancel(t.Context())
				defer end()
				r := newFakeReader(f.ev)
				gen := &fakeGen{ev: f.ev}
				done := make(chan error, 1)
				go func() {
					done <- f.in.consume(ctx, gctx, gen, lane{topic: "delay-input", partition: 0, r: r, prog: &progress{}})
				}()
				time.Sleep(1500 * time.Millisecond) // paused past the lease
				tt.act(lease)
				r.in <- after("delay-input", 0, 5)
				time.Sleep(10 * time.Second)
				if !tt.stored {
					end() // the revoked lease ends the generation (runGeneration)
				}
				stop()
				<-done

				puts, _ := f.store.snapshot()
				adds, _ := f.ix.snapshot()
				refused := counterValue(f.in.m.fenced.WithLabelValues("ingest", writePut))
				if tt.stored {
					if puts == 0 || adds == 0 || gen.committed("delay-input", 0) != 6 || refused != 0 {
						t.Fatalf("puts %d, adds %d, committed %d, refused %v; want stored, indexed, committed at 6, none refused",
							puts, adds, gen.committed("delay-input", 0), refused)
					}
					return
				}
				if puts != 0 || adds != 0 || gen.calls != 0 || refused == 0 {
					t.Fatalf("puts %d, adds %d, commit calls %d, refused %v; want nothing written, the put refused",
						puts, adds, gen.calls, refused)
				}
			})
		})
	}
}

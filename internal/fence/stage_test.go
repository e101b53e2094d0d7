package fence

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delayq/delayq/payload"
)

// puts is a store that counts its writes and reads.
type puts struct{ put, putIDs, get int }

func (p *puts) Put(context.Context, []payload.Task) error                   { p.put++; return nil }
func (p *puts) PutIDs(context.Context, []payload.IDWrite) error             { p.putIDs++; return nil }
func (p *puts) GetIDs(context.Context, []uint64) ([]payload.IDState, error) { return nil, nil }
func (p *puts) Get(context.Context, []payload.Ref) ([]*payload.Task, error) {
	p.get++
	return nil, nil
}

func TestWrapStore(t *testing.T) {
	revoked := NewLease()
	revoked.Revoke()
	tests := []struct {
		name    string
		ctx     context.Context
		written int // writes that reach the store, of Put and PutIDs
		refused float64
	}{
		{"no fence", context.Background(), 2, 0},
		{"valid", With(context.Background(), Until(time.Now().Add(time.Hour))), 2, 0},
		{"revoked", With(context.Background(), revoked), 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fenced"}, []string{"stage", "write"})
			inner := &puts{}
			st := WrapStore(inner, Counter{Refused: vec, Stage: "scanner"}, "store")
			errPut := st.Put(tc.ctx, nil)
			errIDs := st.PutIDs(tc.ctx, nil)
			if _, err := st.Get(tc.ctx, nil); err != nil || inner.get != 1 {
				t.Errorf("a read: %v, %d gets; reads are not fenced", err, inner.get)
			}
			if got := inner.put + inner.putIDs; got != tc.written {
				t.Errorf("%d writes reached the store, want %d", got, tc.written)
			}
			if tc.refused > 0 && (!Refused(errPut) || !Refused(errIDs)) {
				t.Errorf("errors %v, %v; want refusals", errPut, errIDs)
			}
			if got := testutil.ToFloat64(vec.WithLabelValues("scanner", "store")); got != tc.refused {
				t.Errorf("counted %v refusals, want %v", got, tc.refused)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	if Refused(errors.New("broker gone")) || Refused(nil) {
		t.Error("an outage taken for a refusal")
	}
	if !Refused(Until(time.Time{}).Check(context.Background())) {
		t.Error("an expired fence's error not taken for a refusal")
	}
}

func TestKeep(t *testing.T) {
	t.Run("revoked ends leased", func(t *testing.T) {
		renewing := make(chan *Lease)
		wctx, leased, stop := Keep(context.Background(), context.Background(), func(ctx context.Context, l *Lease) {
			l.Renew(time.Now().Add(time.Hour))
			renewing <- l
			<-l.Done()
		})
		defer stop()
		l := <-renewing
		if err := Check(wctx); err != nil {
			t.Fatalf("a renewed lease refuses: %v", err)
		}
		if leased.Err() != nil {
			t.Fatal("leased ended while the lease is held")
		}
		l.Revoke()
		select {
		case <-leased.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the end of renew did not end leased")
		}
		if err := Check(wctx); !Refused(err) {
			t.Fatalf("after the revoke: %v, want a refusal", err)
		}
	})
	t.Run("stop ends renew, not ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			ended := make(chan struct{})
			_, leased, stop := Keep(ctx, context.Background(), func(ctx context.Context, _ *Lease) {
				<-ctx.Done()
				close(ended)
			})
			cancel()
			synctest.Wait() // renew has run as far as it can
			select {
			case <-ended:
				t.Fatal("renew ended with ctx; only stop ends it")
			default:
			}
			stop()
			select {
			case <-ended:
			default:
				t.Fatal("stop returned before renew ended")
			}
			if leased.Err() == nil {
				t.Fatal("leased still live after stop")
			}
		})
	})
}

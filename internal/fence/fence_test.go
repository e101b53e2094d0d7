package fence

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := Until(time.Now().Add(time.Second))
		ctx := With(context.Background(), f)
		if err := Check(ctx); err != nil {
			t.Fatalf("before the deadline: %v", err)
		}
		time.Sleep(time.Second) // a pause past the expiry
		if err := Check(ctx); !errors.Is(err, ErrFenced) {
			t.Fatalf("at the deadline: %v, want ErrFenced", err)
		}
	})
}

func TestCheckWithoutFence(t *testing.T) {
	if err := Check(context.Background()); err != nil {
		t.Fatalf("no fence: %v", err)
	}
}

func TestLease(t *testing.T) {
	tests := []struct {
		name string
		// act runs while a Check waits on a lapsed lease.
		act     func(l *Lease)
		wantErr bool
	}{
		{"renewed", func(l *Lease) { l.Renew(time.Now().Add(time.Second)) }, false},
		{"revoked", func(l *Lease) { l.Revoke() }, true},
		{"renewed into the past", func(l *Lease) { l.Renew(time.Now()); l.Revoke() }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := NewLease()
				res := make(chan error, 1)
				go func() { res <- l.Check(context.Background()) }()
				synctest.Wait()
				select {
				case err := <-res:
					t.Fatalf("Check of a lapsed lease returned %v, want it to wait", err)
				default:
				}
				tt.act(l)
				if err := <-res; (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrFenced)) {
					t.Fatalf("Check = %v, wantErr %v", err, tt.wantErr)
				}
			})
		})
	}
}

func TestLeaseLapsesAndRevokeSticks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLease()
		l.Renew(time.Now().Add(time.Second))
		if err := l.Check(context.Background()); err != nil {
			t.Fatalf("valid lease: %v", err)
		}
		time.Sleep(2 * time.Second) // paused past the validity
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := l.Check(ctx); !errors.Is(err, ErrFenced) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("lapsed lease: %v, want ErrFenced after the wait", err)
		}
		l.Revoke()
		l.Revoke()
		l.Renew(time.Now().Add(time.Hour))
		if err := l.Check(context.Background()); !errors.Is(err, ErrFenced) {
			t.Fatalf("renewed after Revoke: %v, want ErrFenced", err)
		}
		select {
		case <-l.Done():
		default:
			t.Fatal("Done not closed after Revoke")
		}
	})
}

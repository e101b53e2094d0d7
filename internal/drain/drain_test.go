package drain

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := Context(parent, 5*time.Second)
		defer cancel()

		cancelParent()
		time.Sleep(4 * time.Second)
		if ctx.Err() != nil {
			t.Fatal("ended before the grace period passed")
		}
		time.Sleep(2 * time.Second)
		if ctx.Err() == nil {
			t.Fatal("still alive after the grace period")
		}
	})
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := Context(context.Background(), time.Hour)
	cancel()
	if ctx.Err() == nil {
		t.Fatal("cancel did not end the context")
	}
}

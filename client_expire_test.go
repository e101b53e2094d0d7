package delayq

import (
	"errors"
	"testing"
	"time"

	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// ExpireAfter is sent as delay-expire-after, which Decode accepts; a
// negative one is refused before anything is written.
func TestSubmitExpireAfter(t *testing.T) {
	f := newFake(t, Config{SlowAfter: -1})
	if _, err := f.c.Submit(t.Context(), Task{ID: "x", Topic: "orders", After: time.Minute, ExpireAfter: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	got, err := payload.Decode(record.ToMessage(f.read(t, topics.Input, 0)), testNow, payload.DecodeConfig{})
	if err != nil {
		t.Fatalf("Decode rejects the client's message: %v", err)
	}
	if d, ok, _ := payload.ExpireAfter(got.Headers); !ok || d != 5*time.Minute {
		t.Errorf("delay-expire-after %v %v, want 5m", d, ok)
	}
	if _, err := f.c.Submit(t.Context(), Task{Topic: "orders", ExpireAfter: -time.Second}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative ExpireAfter: %v, want ErrInvalid", err)
	}
}

package payload_test

import (
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// delay-expire-after passes through when it is a duration above zero and
// refuses the task otherwise.
func TestDecodeExpireAfter(t *testing.T) {
	ok := map[string]time.Duration{"5s": 5 * time.Second, "90": 90 * time.Second, "1h30m": 90 * time.Minute, "0.5": 500 * time.Millisecond}
	for v, d := range ok {
		got, err := payload.Decode(input("delay-topic", "orders", "delay-after", "1s", payload.HeaderExpireAfter, v), now, payload.DecodeConfig{})
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if e, found, err := payload.ExpireAfter(got.Headers); err != nil || !found || e != d {
			t.Errorf("%q: ExpireAfter = %v, %v, %v; want %v", v, e, found, err, d)
		}
	}
	for _, v := range []string{"0", "0s", "-5s", "soon", ""} {
		_, err := payload.Decode(input("delay-topic", "orders", "delay-after", "1s", payload.HeaderExpireAfter, v), now, payload.DecodeConfig{})
		if err == nil || !strings.Contains(err.Error(), payload.HeaderExpireAfter) {
			t.Errorf("%q: err %v, want a refusal naming %s", v, err, payload.HeaderExpireAfter)
		}
	}
	_, err := payload.Decode(input("delay-topic", "orders", "delay-after", "1s", payload.HeaderExpireAfter, "1s", payload.HeaderExpireAfter, "2s"), now, payload.DecodeConfig{})
	if err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("twice: %v", err)
	}
}

package topicctl

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/delayq/delayq/scanner/schedule"
)

// TestBucketIsTheRule: the bucket in Redis (takeScript) grants what the
// scanner's scheduling rule (schedule.Bucket, which the rule's model test
// checks against the rate) grants, call for call, so that the model's
// verdict holds for the real releaser. Burst is the rule's share.
func TestBucketIsTheRule(t *testing.T) {
	if schedule.Burst(100) != max(1, 100/Burst) || schedule.Burst(3) != 1 {
		t.Fatalf("schedule.Burst differs from topicctl.Burst %d", Burst)
	}
	ctx := context.Background()
	s := newStore(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for topic := range 20 {
		name := "t" + string(rune('a'+topic))
		rate := 1 + rng.IntN(200)
		var rule schedule.Bucket
		now := time.UnixMilli(1_767_225_600_000)
		for call := range 50 {
			now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
			want := rng.IntN(2 * schedule.Burst(rate))
			got, err := s.Take(ctx, name, rate, want, now)
			if err != nil {
				t.Fatal(err)
			}
			if exp := rule.Take(rate, want, now); got != exp {
				t.Fatalf("topic %s (rate %d), call %d at %d asking %d: Redis granted %d, the rule %d",
					name, rate, call, now.UnixMilli(), want, got, exp)
			}
		}
	}
}

package ingest

import (
	"context"
	"time"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/payload"
)

// Replicas waits until the Redis writes acknowledged so far reached the
// replicas of every master (redisconn.Replicas). Mark names the masters
// (their replication ids); Wait waits and returns the Mark of the masters
// it waited on. Every error is an outage (a replica down is one).
type Replicas interface {
	Mark(ctx context.Context) (string, error)
	Wait(ctx context.Context) (string, error)
}

// handleReplicated handles batch and, with Config.Replicas, waits until
// its Redis writes reached the replicas. Redis replicates asynchronously:
// a master that acknowledged the batch's index writes may die before its
// replica has them, and the replica promoted in its place never schedules
// those tasks. So the masters are named before the batch is handled and
// again once their replicas acknowledged it; when they differ, a master
// was replaced in between and some writes may have gone with it, and the
// batch is handled again (every write is idempotent) on the new masters.
// A replica down stalls the lane like any outage, retried through the
// stage (op "wait").
func (in *Ingester) handleReplicated(ctx context.Context, batch []payload.Message) error {
	r := in.cfg.Replicas
	if r == nil {
		return in.handleSafe(ctx, batch, time.Now())
	}
	policy := retry.Policy{Backoff: in.backoff, CallTimeout: in.cfg.CallTimeout}
	var before, after string
	err := in.stage.Do(ctx, opWait, policy, func(ctx context.Context) (err error) {
		before, err = r.Mark(ctx)
		return err
	})
	if err != nil {
		return err
	}
	for {
		if err := in.handleSafe(ctx, batch, time.Now()); err != nil {
			return err
		}
		err := in.stage.Do(ctx, opWait, policy, func(ctx context.Context) (err error) {
			after, err = r.Wait(ctx)
			return err
		})
		if err != nil {
			return err
		}
		if after == before {
			return nil
		}
		first := batch[0]
		in.log.Warn("redis master replaced while the batch was stored, storing it again", "topic", first.Topic,
			"partition", first.Partition, "first_offset", first.Offset, "last_offset", batch[len(batch)-1].Offset)
		in.m.replicasRedone.Inc()
		before = after
	}
}

package ingest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/delayq/delayq/payload"
)

// ReasonInternal is the delay-error of a message whose handling panicked
// (a bug, in delayq or a store client): it goes to the failed topic so that
// the partition moves on.
const ReasonInternal = "internal error"

// panicError is a panic recovered while handling a batch.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// handleSafe is handle that survives a panic in the handling goroutine: a
// batch whose handling panicked is handled again in halves (every write
// of handle is idempotent), down to the message that panics alone, which
// goes to the failed topic with reason ReasonInternal and an ERROR line
// naming its position. The other messages are stored as usual and the lane
// keeps running. A panic in a goroutine a store client starts itself still
// ends the process.
func (in *Ingester) handleSafe(ctx context.Context, msgs []payload.Message, now time.Time) error {
	err := in.handleRecovered(ctx, msgs, now)
	var p *panicError
	switch {
	case !errors.As(err, &p):
		return err
	case len(msgs) > 1:
		first, last := msgs[0], msgs[len(msgs)-1]
		in.log.Error("panic while handling a batch, handling it again in halves", "topic", first.Topic,
			"partition", first.Partition, "first_offset", first.Offset, "last_offset", last.Offset, "panic", fmt.Sprint(p.value))
		mid := len(msgs) / 2
		if err := in.handleSafe(ctx, msgs[:mid], now); err != nil {
			return err
		}
		return in.handleSafe(ctx, msgs[mid:], now)
	}
	m := msgs[0]
	in.log.Error("panic while handling a message, sending it to the failed topic", "topic", m.Topic,
		"partition", m.Partition, "offset", m.Offset, "panic", fmt.Sprint(p.value), "stack", string(p.stack))
	if err := in.writeFailed(ctx, []payload.Message{in.failedMessage(m, ReasonInternal)}); err != nil {
		return fmt.Errorf("ingest: write a message to %s: %w", in.cfg.Failed, err)
	}
	in.m.failed.WithLabelValues(reasonPanic).Inc()
	return nil
}

// handleRecovered is handle with a panic returned as a *panicError.
func (in *Ingester) handleRecovered(ctx context.Context, msgs []payload.Message, now time.Time) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return in.handle(ctx, msgs, now)
}

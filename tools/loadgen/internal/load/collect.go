package load

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/payload"
)

// collect reads every partition of topic from the start, one reader each,
// and calls fn with each message and the time it was read, until ctx ends.
// The returned function waits for the readers to stop.
func collect(ctx context.Context, brokers []string, auth *kafkaauth.Auth, topic string, partitions int, fn func(kafka.Message, time.Time)) func() {
	var wg sync.WaitGroup
	for p := range partitions {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   brokers,
			Dialer:    auth.Dialer(0),
			Topic:     topic,
			Partition: p,
			MinBytes:  1,
			MaxBytes:  16 << 20,
			MaxWait:   50 * time.Millisecond,
		})
		wg.Go(func() {
			defer r.Close()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, context.Canceled) {
						return
					}
					time.Sleep(100 * time.Millisecond)
					continue
				}
				fn(m, time.Now())
			}
		})
	}
	return wg.Wait
}

// delivery turns a business-topic message into a Delivery.
func delivery(m kafka.Message, seen time.Time) Delivery {
	d := Delivery{Seq: -1, Written: m.Time.UnixMilli(), Seen: seen.UnixMilli()}
	if seq, err := strconv.Atoi(string(m.Key)); err == nil {
		d.Seq = seq
	}
	for _, h := range m.Headers {
		if h.Key == payload.HeaderAt {
			if t, err := time.Parse(time.RFC3339Nano, string(h.Value)); err == nil {
				d.ExecAt = t.UnixMilli()
			}
		}
	}
	return d
}

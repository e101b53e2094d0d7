package consumer

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/internal/fence"
	"github.com/delayq/delayq/kafka/admin"
)

// TestRealKafkaFence: on the real broker, the fence of a member's
// generation is valid while the member is in the group and revoked once
// the coordinator no longer counts it (here: it left; a process paused
// past its session is removed the same way), so writes made for that
// generation's partitions are refused from then on.
func TestRealKafkaFence(t *testing.T) {
	brokers := stacktest.Kafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 10)
	topic, id := "dqtest-fence-"+suffix, "dqtest-fence-"+suffix
	if err := admin.Ensure(ctx, brokers, nil, []admin.Spec{{Name: topic, Partitions: 1, ReplicationFactor: 1}}); err != nil {
		t.Fatal(err)
	}
	cfg := GroupConfig{ID: id, Brokers: brokers, Topics: []string{topic}}
	group, err := NewGroup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := group.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lease := fence.NewLease()
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Fence(fctx, cfg, gen, lease, slog.New(slog.DiscardHandler))
	}()
	defer func() { stop(); <-done }()

	if err := lease.Check(ctx); err != nil {
		t.Fatalf("fence of a live member: %v", err)
	}
	// The generation's member leaves the group.
	if err := group.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Done():
	case <-ctx.Done():
		t.Fatal("fence not revoked after the member left the group")
	}
	if err := lease.Check(ctx); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("fence after the member left: %v, want ErrFenced", err)
	}
}

// TestRealKafkaHeartbeatDecoding pins the kafka-go fact heartbeatError
// works around: a heartbeat of a member the coordinator does not know
// comes back with Error nil and the code UNKNOWN_MEMBER_ID (25) in
// Throttle's milliseconds. heartbeat.beat reads it either way.
func TestRealKafkaHeartbeatDecoding(t *testing.T) {
	brokers := stacktest.Kafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	group := "dqtest-heartbeat-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	c := &kafka.Client{Addr: kafka.TCP(brokers...)}
	res, err := c.Heartbeat(ctx, &kafka.HeartbeatRequest{
		Addr: kafka.TCP(brokers...), GroupID: group, GenerationID: 1, MemberID: "nobody",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || res.Throttle != 25*time.Millisecond {
		t.Errorf("kafka-go decodes heartbeat answers right now (Error %v, Throttle %v): drop heartbeatError's workaround", res.Error, res.Throttle)
	}
	hb := heartbeater{c: c, group: group, gen: 1, member: "nobody"}
	if err := hb.beat(ctx); !errors.Is(err, kafka.UnknownMemberId) {
		t.Fatalf("beat of an unknown member: %v, want UNKNOWN_MEMBER_ID", err)
	}
}

package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/fence"
	"github.com/delayq/delayq/kafka/admin"
)

// FenceMargin is how much shorter than the session a heartbeat's lease is:
// a heartbeat sent at t proves the member alive to the coordinator until
// at least t + SessionTimeout, and the lease ends FenceMargin before, room
// for a write that passed its check to land.
const FenceMargin = 2 * HeartbeatInterval

// Fence renews lease while the coordinator counts gen's member in its
// group, until ctx ends. It sends its own heartbeats for the member, one
// every HeartbeatInterval from the start (kafka-go's are not observable):
// an answer of no error or REBALANCE_IN_PROGRESS (the member keeps its
// partitions until it rejoins) renews lease until SessionTimeout −
// FenceMargin after the heartbeat was sent, on the monotonic clock;
// ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID (the
// coordinator gave the partitions away: a process paused past its
// session) revoke it; anything else (the coordinator unreachable or
// moving) leaves it to lapse. The lease is lapsed until the first answer.
func Fence(ctx context.Context, cfg GroupConfig, gen *kafka.Generation, lease *fence.Lease, log *slog.Logger) {
	brokers := cfg.Brokers
	if len(brokers) == 0 {
		brokers = []string{admin.DefaultBroker}
	}
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: cfg.Auth.Transport(), Timeout: SessionTimeout - FenceMargin}
	hb := heartbeater{c: c, group: cfg.ID, gen: gen.ID, member: gen.MemberID}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		err := hb.beat(ctx)
		switch {
		case err == nil, errors.Is(err, kafka.RebalanceInProgress):
			lease.Renew(sent.Add(SessionTimeout - FenceMargin))
		case errors.Is(err, kafka.IllegalGeneration), errors.Is(err, kafka.UnknownMemberId),
			errors.Is(err, kafka.FencedInstanceID):
			log.Info("generation fenced: the coordinator gave its partitions away, no more writes for them",
				"generation", gen.ID, "member", gen.MemberID, "err", err)
			lease.Revoke()
			return
		default:
			hb.coordinator = nil // ask for it again
			if ctx.Err() == nil {
				log.Debug("fence heartbeat failed", "generation", gen.ID, "err", err)
			}
		}
		t.Reset(HeartbeatInterval)
	}
}

// heartbeater sends heartbeats of one member of one generation.
type heartbeater struct {
	c           *kafka.Client
	group       string
	gen         int32
	member      string
	coordinator net.Addr // nil: ask for it
}

// beat sends one heartbeat and returns the coordinator's error code as an
// error (a kafka.Error), or the error of the round trip.
func (h *heartbeater) beat(ctx context.Context) error {
	if h.coordinator == nil {
		res, err := h.c.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{
			Key: h.group, KeyType: kafka.CoordinatorKeyTypeConsumer,
		})
		if err != nil {
			return fmt.Errorf("find coordinator of %s: %w", h.group, err)
		}
		if res.Error != nil {
			return fmt.Errorf("find coordinator of %s: %w", h.group, res.Error)
		}
		h.coordinator = kafka.TCP(net.JoinHostPort(res.Coordinator.Host, strconv.Itoa(res.Coordinator.Port)))
	}
	res, err := h.c.Heartbeat(ctx, &kafka.HeartbeatRequest{
		Addr: h.coordinator, GroupID: h.group, GenerationID: h.gen, MemberID: h.member,
	})
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return heartbeatError(res)
}

// heartbeatError is the error code of a heartbeat's answer. kafka-go
// v0.4.51 declares the response's fields in the wrong order (ErrorCode
// before ThrottleTimeMs; from version 1 on the throttle comes first), so
// the broker's error code lands in the low 16 bits of Throttle (in ms)
// and Error stays nil (TestRealKafkaHeartbeatDecoding pins this; when a
// kafka-go release fixes it, that test fails and this goes).
func heartbeatError(res *kafka.HeartbeatResponse) error {
	if res.Error != nil {
		return res.Error
	}
	if code := int16(res.Throttle.Milliseconds() & 0xffff); code != 0 {
		return kafka.Error(code)
	}
	return nil
}

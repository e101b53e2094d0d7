package scanner

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/kafka/consumer"
	"github.com/delayq/delayq/kafka/producer"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"defaults", Config{Brokers: []string{"b"}}, nil},
		{"longest drain", Config{Brokers: []string{"b"}, DrainTimeout: MaxDrainTimeout}, nil},
		{"everything wrong", Config{Workers: -1, BatchSize: 6000, MaxAttempts: -1, Topic: "x", FailedTopic: "x",
			DrainTimeout: MaxDrainTimeout + time.Millisecond, Backoff: retry.Backoff{Base: time.Second, Max: time.Millisecond}},
			[]string{"no brokers", "workers", "batch size", "max attempts", "both", "drain timeout", "backoff"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.setDefaults()
			err := cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("Validate = %v, want ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The default drain and the final commit fit in what the group allows
// after the last heartbeat.
func TestDrainFitsSession(t *testing.T) {
	if DefaultDrainTimeout > MaxDrainTimeout || MaxDrainTimeout+commitReserve > consumer.SessionTimeout-consumer.HeartbeatInterval {
		t.Errorf("drain %v (max %v) + commit %v does not fit session %v - heartbeat %v",
			DefaultDrainTimeout, MaxDrainTimeout, commitReserve, consumer.SessionTimeout, consumer.HeartbeatInterval)
	}
}

// The scanner finds a zset's partition as the dispatcher's writer chooses
// it: producer.New routes by kafka.Hash of the key.
func TestPartitionOfMatchesProducer(t *testing.T) {
	w := producer.New(producer.Config{})
	defer w.Close()
	if _, ok := w.Balancer.(*kafka.Hash); !ok {
		t.Fatalf("producer.New balances with %T; the scanner's partitionOf assumes *kafka.Hash", w.Balancer)
	}
	for _, n := range []int{1, 3, 8, 13} {
		ps := make([]int, n)
		for i := range ps {
			ps[i] = i
		}
		for i := range 200 {
			key := fmt.Sprintf("delayq:202611222300:%d", i)
			if got, want := partitionOf(key, n), w.Balancer.Balance(kafka.Message{Key: []byte(key)}, ps...); got != want {
				t.Fatalf("partitionOf(%q, %d) = %d, producer balancer says %d", key, n, got, want)
			}
		}
	}
}

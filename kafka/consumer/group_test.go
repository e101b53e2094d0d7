package consumer

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func TestGroupConfig(t *testing.T) {
	gc := groupConfig(GroupConfig{ID: "g", Topics: []string{"t"}, Logger: slog.New(slog.DiscardHandler)})
	if gc.SessionTimeout != SessionTimeout || gc.HeartbeatInterval != HeartbeatInterval || gc.JoinGroupBackoff != JoinBackoff {
		t.Errorf("timing: %+v", gc)
	}
	if !gc.WatchPartitionChanges || gc.PartitionWatchInterval != PartitionWatchInterval {
		t.Errorf("a group must watch its topics' partitions: %+v", gc)
	}
	if gc.StartOffset != kafka.FirstOffset || gc.Brokers[0] != "127.0.0.1:9092" || gc.ErrorLogger == nil {
		t.Errorf("defaults: %+v", gc)
	}
	if err := gc.Validate(); err != nil {
		t.Errorf("kafka-go refuses the config: %v", err)
	}
	for _, bad := range []GroupConfig{{Topics: []string{"t"}}, {ID: "g"}} {
		if _, err := NewGroup(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("NewGroup(%+v) = %v, want ErrConfig", bad, err)
		}
	}
}

// The group timing: a crashed member's partitions move about
// SessionTimeout after its last heartbeat; 6 s is the smallest session a
// broker accepts by default (group.min.session.timeout.ms), and kafka-go
// wants at least three heartbeats per session.
func TestGroupTiming(t *testing.T) {
	if SessionTimeout != 6*time.Second {
		t.Errorf("SessionTimeout %v, want the broker's minimum 6s", SessionTimeout)
	}
	if 3*HeartbeatInterval > SessionTimeout {
		t.Errorf("heartbeat %v too slow for session %v", HeartbeatInterval, SessionTimeout)
	}
	if MaxDrain != SessionTimeout-HeartbeatInterval {
		t.Errorf("MaxDrain %v", MaxDrain)
	}
}

// TestStableRange: the assignment does not depend on the order the
// partitions come in (a metadata response's, which changes with leaders).
func TestStableRange(t *testing.T) {
	members := []kafka.GroupMember{{ID: "a", Topics: []string{"in"}}, {ID: "b", Topics: []string{"in"}}}
	var ps []kafka.Partition
	for _, id := range []int{3, 0, 2, 1} {
		ps = append(ps, kafka.Partition{Topic: "in", ID: id})
	}
	got := stableRange{}.AssignGroups(members, ps)
	if a, b := got["a"]["in"], got["b"]["in"]; !slices.Equal(a, []int{0, 1}) || !slices.Equal(b, []int{2, 3}) {
		t.Fatalf("a=%v b=%v, want a=[0 1] b=[2 3]", a, b)
	}
	if name := (stableRange{}).ProtocolName(); name != "range" {
		t.Fatalf("protocol %q, want range (older members must share the group)", name)
	}
}

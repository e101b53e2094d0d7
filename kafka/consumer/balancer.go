package consumer

import (
	"cmp"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"
)

// stableRange is kafka-go's range balancer (protocol "range", so members
// of older delayd join the same group) over partitions sorted by topic and
// id. kafka-go hands a balancer the partitions in the order of a metadata
// response, which changes when partition leaders move: range over that
// order gave the members other partitions at every rebalance after a
// broker restart, and a batch whose commit the rebalance refused was then
// read again by another member instead of being resumed after by its own.
type stableRange struct{ kafka.RangeGroupBalancer }

func (b stableRange) AssignGroups(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	partitions = slices.Clone(partitions)
	slices.SortFunc(partitions, func(x, y kafka.Partition) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.ID, y.ID))
	})
	return b.RangeGroupBalancer.AssignGroups(members, partitions)
}

// balancers are the group protocols delayq's members offer: kafka-go's
// defaults, range made stable.
var balancers = []kafka.GroupBalancer{stableRange{}, kafka.RoundRobinGroupBalancer{}}

package ingest

import "sync"

// storedAhead remembers, per partition, the offset after the last batch
// this Ingester stored whose commit its generation's end refused (the
// group coordinator moved with its broker, the group rebalanced). A later
// generation that assigns the partition to this member again starts there
// instead of at the committed offset: reading that batch again would bring
// back the tasks of it delivered meanwhile, as duplicates.
type storedAhead struct {
	mu   sync.Mutex
	next map[lanePartition]int64
}

type lanePartition struct {
	topic     string
	partition int
}

// set records that the messages of topic/partition before next are stored.
func (s *storedAhead) set(topic string, partition int, next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		s.next = map[lanePartition]int64{}
	}
	k := lanePartition{topic, partition}
	s.next[k] = max(s.next[k], next)
}

// start returns where a new generation reads topic/partition from: the
// committed offset, or the stored one when that is further. It forgets the
// partition.
func (s *storedAhead) start(topic string, partition int, committed int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := lanePartition{topic, partition}
	next, ok := s.next[k]
	delete(s.next, k)
	if !ok || next <= committed {
		return committed
	}
	return next
}

package scanner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/dispatcher"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// memIndex is a one-zset in-memory Index, so that the benchmark measures the
// scan loop rather than Redis.
type memIndex struct {
	mu      sync.Mutex
	entries []zset.Entry // sorted by ExecAt
}

func (m *memIndex) Due(_ context.Context, _ string, until int64, limit int) ([]zset.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for n < len(m.entries) && n < limit && m.entries[n].ExecAt <= until {
		n++
	}
	return slices.Clone(m.entries[:n]), nil
}

func (m *memIndex) Remove(_ context.Context, _ string, entries []zset.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	gone := make(map[uint64]bool, len(entries))
	for _, e := range entries {
		gone[e.ID] = true
	}
	m.entries = slices.DeleteFunc(m.entries, func(e zset.Entry) bool { return gone[e.ID] })
	return nil
}

func BenchmarkScan(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			ctx := context.Background()
			store := payload.NewMemory()
			execAt := time.Now().Add(-time.Minute).UnixMilli()
			ts := tasks(n, "orders", execAt)
			if err := store.Put(ctx, ts); err != nil {
				b.Fatal(err)
			}
			all := make([]zset.Entry, n)
			for i, t := range ts {
				all[i] = zset.Entry{ID: t.ID, ExecAt: t.ExecAt}
			}
			ix := &memIndex{}
			w := &fakeWriter{}
			s, err := New(Config{Brokers: []string{"b"}, Registerer: prometheus.NewRegistry()}, ix, store, w)
			if err != nil {
				b.Fatal(err)
			}
			task := dispatcher.ScanTask{Zset: "z", Until: time.Now().UnixMilli()}
			b.ReportAllocs()
			for b.Loop() {
				ix.entries = slices.Clone(all)
				w.written, w.calls = w.written[:0], w.calls[:0]
				if err := s.scan(ctx, task); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

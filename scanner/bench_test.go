package scanner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// memIndex is an in-memory Index, so that the benchmarks measure the scan
// loop rather than Redis.
type memIndex struct {
	mu    sync.Mutex
	zsets map[string][]zset.Entry // sorted by ExecAt
}

func (m *memIndex) set(key string, entries []zset.Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.zsets == nil {
		m.zsets = map[string][]zset.Entry{}
	}
	m.zsets[key] = slices.Clone(entries)
}

func (m *memIndex) Due(_ context.Context, key string, until int64, limit int) ([]zset.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es := m.zsets[key]
	n := 0
	for n < len(es) && n < limit && es[n].ExecAt <= until {
		n++
	}
	return slices.Clone(es[:n]), nil
}

func (m *memIndex) Remove(_ context.Context, key string, entries []zset.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	gone := make(map[uint64]bool, len(entries))
	for _, e := range entries {
		gone[e.ID] = true
	}
	m.zsets[key] = slices.DeleteFunc(m.zsets[key], func(e zset.Entry) bool { return gone[e.ID] })
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
			w := &nopWriter{}
			s, err := New(Config{Brokers: []string{"b"}, Registerer: prometheus.NewRegistry()}, ix, store, w)
			if err != nil {
				b.Fatal(err)
			}
			task := scantask.Task{Zset: "z", Until: time.Now().UnixMilli()}
			b.ReportAllocs()
			for b.Loop() {
				ix.set("z", all)
				if err := s.scan(ctx, task); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

// nopWriter accepts every write and keeps nothing.
type nopWriter struct{}

func (nopWriter) WriteMessages(context.Context, ...kafka.Message) error { return nil }

// BenchmarkWork is a worker draining due zsets: the scan tasks of several
// zsets in one queue, stepped together (one store Get and one write for the
// due entries of all of them).
func BenchmarkWork(b *testing.B) {
	for _, c := range []struct{ zsets, each int }{{1, 500}, {16, 100}, {16, 1000}} {
		b.Run(fmt.Sprintf("zsets=%d/tasks=%d", c.zsets, c.each), func(b *testing.B) {
			ctx := context.Background()
			store := payload.NewMemory()
			execAt := time.Now().Add(-time.Minute).UnixMilli()
			ix := &memIndex{}
			all := make([][]zset.Entry, c.zsets)
			for z := range c.zsets {
				ts := tasks(c.each, "orders", execAt)
				for i := range ts {
					ts[i].Name = fmt.Sprintf("z%d-%d", z, i)
					ts[i].ID = payload.TaskID(ts[i].Name)
					all[z] = append(all[z], zset.Entry{ID: ts[i].ID, ExecAt: ts[i].ExecAt})
				}
				if err := store.Put(ctx, ts); err != nil {
					b.Fatal(err)
				}
			}
			s, err := New(Config{Brokers: []string{"b"}, Registerer: prometheus.NewRegistry()}, ix, store, nopWriter{})
			if err != nil {
				b.Fatal(err)
			}
			until := time.Now().UnixMilli()
			b.ReportAllocs()
			for b.Loop() {
				p := newPartition(0)
				q := make(chan job, c.zsets)
				for z := range c.zsets {
					key := fmt.Sprintf("z%d", z)
					ix.set(key, all[z])
					p.start(int64(z))
					q <- job{task: scantask.Task{Zset: key, Until: until}, offset: int64(z)}
				}
				close(q)
				s.work(ctx, ctx, p, q)
			}
			b.ReportMetric(float64(c.zsets*c.each)*float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

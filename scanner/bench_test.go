package scanner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/scantask"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// nopWriter accepts every write and keeps nothing.
type nopWriter struct{}

func (nopWriter) WriteMessages(context.Context, ...kafka.Message) error { return nil }

// BenchmarkWork is a worker draining due zsets: the scan tasks of several
// zsets in one queue, stepped together (one store Get and one write per
// topic for the due entries of all of them). It measures the scan loop,
// with an in-memory index and store and a writer that accepts everything.
func BenchmarkWork(b *testing.B) {
	for _, c := range []struct{ zsets, each int }{{1, 500}, {1, 5000}, {16, 100}, {16, 1000}} {
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
			s, err := New(Config{Brokers: []string{"b"}, SingleWriter: nopWriter{}, Registerer: prometheus.NewRegistry()},
				ix, store, nopWriter{})
			if err != nil {
				b.Fatal(err)
			}
			until := time.Now().UnixMilli()
			b.ReportAllocs()
			for b.Loop() {
				p := newPartition(0)
				q := make(chan scanTask, c.zsets)
				for z := range c.zsets {
					key := fmt.Sprintf("z%d", z)
					ix.set(key, all[z])
					p.start(int64(z))
					q <- scanTask{Task: scantask.Task{Zset: key, Until: until}, offset: int64(z)}
				}
				close(q)
				s.work(ctx, p, q)
			}
			b.ReportMetric(float64(c.zsets*c.each)*float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

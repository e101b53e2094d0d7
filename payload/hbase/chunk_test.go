package hbase

import "testing"

func TestChunkRows(t *testing.T) {
	h := &Store{batch: 2000}
	for _, c := range []struct{ n, want int }{
		{0, 1}, {1, 1}, {2000, 2000}, {2001, 1001}, {3571, 1786}, {4000, 2000}, {4001, 1334}, {6001, 1501},
	} {
		got := h.chunkRows(c.n)
		if got != c.want {
			t.Errorf("chunkRows(%d) = %d, want %d", c.n, got, c.want)
		}
		if c.n > 0 && (got > h.batch || (c.n+got-1)/got != (c.n+h.batch-1)/h.batch) {
			t.Errorf("chunkRows(%d) = %d: more chunks than PutBatch needs, or chunks above it", c.n, got)
		}
	}
}

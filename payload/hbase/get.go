package hbase

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tsuna/gohbase/filter"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"golang.org/x/sync/errgroup"

	"github.com/delayq/delayq/payload"
)

// wanted is a row a Get asks for: its key and the index of its ref.
type wanted struct {
	key []byte
	at  int
}

// Get reads the rows at refs, a few calls in flight. The rows of a salt
// that it asks for at least ScanRows of are read with one scan of that
// salt from the first to the last of them, filtered to exactly those rows
// (MultiRowRangeFilter); the rest with point Gets, PutBatch a SendBatch
// call.
//
// Rows due together sit together in their salt, so a dense step (many
// tasks due in the same second) asks for many rows close to each other: the
// scan costs the region server one seek from row to row in one region
// scanner, where every Get opens scanners over the memstore and each store
// file of its own. A 1M burst drained with half the HBase CPU of Gets.
func (h *Store) Get(ctx context.Context, refs []payload.Ref) (_ []*payload.Task, err error) {
	if len(refs) == 0 {
		return []*payload.Task{}, nil
	}
	defer h.observe("get", time.Now(), &err)

	bySalt := make([][]wanted, h.salts)
	for i, r := range refs {
		k := payload.RowKey(h.salts, r)
		bySalt[k[0]] = append(bySalt[k[0]], wanted{key: k, at: i})
	}
	var points []wanted
	out := make([]*payload.Task, len(refs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for _, ws := range bySalt {
		if h.scanRows < 0 || len(ws) < h.scanRows {
			points = append(points, ws...)
			continue
		}
		g.Go(func() error { return h.scanSalt(gctx, refs, ws, out) })
	}
	for lo := 0; lo < len(points); lo += h.batch {
		ws := points[lo:min(lo+h.batch, len(points))]
		g.Go(func() error { return h.getRows(gctx, refs, ws, out) })
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("hbase: get %d rows: %w", len(refs), err)
	}
	return out, nil
}

// getRows reads the rows ws with one SendBatch of point Gets.
func (h *Store) getRows(ctx context.Context, refs []payload.Ref, ws []wanted, out []*payload.Task) error {
	calls := make([]hrpc.Call, len(ws))
	for i, w := range ws {
		get, err := hrpc.NewGet(ctx, h.table, w.key)
		if err != nil {
			return err
		}
		calls[i] = get
	}
	res, err := h.send(ctx, calls)
	if err != nil {
		return err
	}
	for i, r := range res {
		resp, ok := r.Msg.(*pb.GetResponse)
		if !ok {
			return fmt.Errorf("get %d: unexpected response %T", refs[ws[i].at].ID, r.Msg)
		}
		if err := h.fill(refs, ws[i:i+1], hrpc.ToLocalResult(resp.GetResult()).Cells, out); err != nil {
			return err
		}
	}
	return nil
}

// scanSalt reads the rows ws, all of one salt, with one scan from the
// first to the last of them that returns only those rows.
func (h *Store) scanSalt(ctx context.Context, refs []payload.Ref, ws []wanted, out []*payload.Task) error {
	slices.SortFunc(ws, func(a, b wanted) int { return bytes.Compare(a.key, b.key) })
	ranges := make([]*filter.RowRange, 0, len(ws))
	for i, w := range ws {
		if i == 0 || !bytes.Equal(w.key, ws[i-1].key) {
			ranges = append(ranges, filter.NewRowRange(w.key, w.key, true, true))
		}
	}
	last := ws[len(ws)-1].key
	stop := append(last[:len(last):len(last)], 0) // the first key after last
	scan, err := hrpc.NewScanRange(ctx, h.table, ws[0].key, stop,
		hrpc.Filters(filter.NewMultiRowRangeFilter(ranges)))
	if err != nil {
		return err
	}
	sc := h.client.Scan(scan)
	defer sc.Close()
	for {
		row, err := sc.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return shortError{err}
		}
		if len(row.Cells) == 0 {
			continue
		}
		// Rows come in key order: skip the wanted rows that are not stored.
		key := row.Cells[0].Row
		for len(ws) > 0 && bytes.Compare(ws[0].key, key) < 0 {
			ws = ws[1:]
		}
		n := 0
		for n < len(ws) && bytes.Equal(ws[n].key, key) {
			n++
		}
		if n == 0 {
			return fmt.Errorf("scan of salt %d: row %x not asked for", key[0], key)
		}
		if err := h.fill(refs, ws[:n], row.Cells, out); err != nil {
			return err
		}
		ws = ws[n:]
	}
}

// fill sets the task of each of ws (one row, asked for once or more) from
// the row's cells; no cells: the row is missing and the tasks stay nil.
func (h *Store) fill(refs []payload.Ref, ws []wanted, cells []*hrpc.Cell, out []*payload.Task) error {
	if len(cells) == 0 {
		return nil
	}
	for _, w := range ws {
		t, err := rowTask(refs[w.at], cells)
		if err != nil {
			return err
		}
		out[w.at] = t
	}
	return nil
}

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
// call. Gets that run at the same time are read together (merge.go), unless
// MergedGets is negative.
//
// Rows due together sit together in their salt, so a dense step (many
// tasks due in the same second) asks for many rows close to each other: the
// scan costs the region server one seek from row to row in one region
// scanner, where every Get opens scanners over the memstore and each store
// file of its own (measured: docs/performance.md, "scans instead of point
// Gets").
func (h *Store) Get(ctx context.Context, refs []payload.Ref) (_ []*payload.Task, err error) {
	if len(refs) == 0 {
		return []*payload.Task{}, nil
	}
	defer h.observe("get", time.Now(), &err)
	var out []*payload.Task
	if h.merge != nil && len(refs) <= maxMergedRefs {
		out, err = h.merge.get(ctx, refs)
	} else {
		var errs []error
		if out, errs, err = h.read(ctx, refs); err == nil {
			err = firstError(errs)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("hbase: get %d rows: %w", len(refs), err)
	}
	return out, nil
}

// read reads the rows at refs (see Get). It fails as a whole when a call
// fails; a row that cannot be read as a task fails only its refs: errs[i]
// is the error of refs[i].
func (h *Store) read(ctx context.Context, refs []payload.Ref) (out []*payload.Task, errs []error, err error) {
	bySalt := make([][]wanted, h.salts)
	for i, r := range refs {
		k := payload.RowKey(h.salts, r)
		bySalt[k[0]] = append(bySalt[k[0]], wanted{key: k, at: i})
	}
	var points []wanted
	rs := rows{refs: refs, out: make([]*payload.Task, len(refs)), errs: make([]error, len(refs))}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for _, ws := range bySalt {
		if h.scanRows < 0 || len(ws) < h.scanRows {
			points = append(points, ws...)
			continue
		}
		g.Go(func() error { return h.scanSalt(gctx, rs, ws) })
	}
	for lo := 0; lo < len(points); lo += h.batch {
		ws := points[lo:min(lo+h.batch, len(points))]
		g.Go(func() error { return h.getRows(gctx, rs, ws) })
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return rs.out, rs.errs, nil
}

// rows is what a read fills: the task and the error of each ref.
type rows struct {
	refs []payload.Ref
	out  []*payload.Task
	errs []error
}

// getRows reads the rows ws with one SendBatch of point Gets.
func (h *Store) getRows(ctx context.Context, rs rows, ws []wanted) error {
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
			return fmt.Errorf("get %d: unexpected response %T", rs.refs[ws[i].at].ID, r.Msg)
		}
		rs.fill(ws[i:i+1], hrpc.ToLocalResult(resp.GetResult()).Cells)
	}
	return nil
}

// scanSalt reads the rows ws, all of one salt, with one scan from the
// first to the last of them that returns only those rows.
func (h *Store) scanSalt(ctx context.Context, rs rows, ws []wanted) error {
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
		rs.fill(ws[:n], row.Cells)
		ws = ws[n:]
	}
}

// fill sets the task of each of ws (one row, asked for once or more) from
// the row's cells, or its error when the cells are no task; no cells: the
// row is missing and the tasks stay nil.
func (rs rows) fill(ws []wanted, cells []*hrpc.Cell) {
	if len(cells) == 0 {
		return
	}
	for _, w := range ws {
		rs.out[w.at], rs.errs[w.at] = rowTask(rs.refs[w.at], cells)
	}
}

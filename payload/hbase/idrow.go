package hbase

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"golang.org/x/sync/errgroup"

	"github.com/delayq/delayq/payload"
)

// Id row cells (family d, row payload.IDRowKey): the id → due-time lookup
// of cancel by id alone and reschedule. Times are 8-byte big-endian unix ms.
// Rows written before this layout also hold d:n (the task name); it was
// never read and is no longer written.
const (
	colIDSubmitted = "s"  // due time of the latest submit
	colIDAt        = "a"  // current due time after a move
	colIDMoving    = "r"  // latest reschedule's target
	colIDCancelled = "x"  // cancelled by id alone (value: "1")
	colIDSubRec    = "sr" // record time of the latest submit (taskstate.State)
	colIDMoveRec   = "rr" // record time of the latest reschedule
	colIDMoveFail  = "rf" // record time of a reschedule failed for an unknown id
	colIDCancelRec = "xr" // record time of the latest cancel by id alone
	colIDReplacing = "u"  // latest replace's due time (update)
	colIDRepRec    = "ur" // its record time
	colIDVersion   = "v"  // record time of the replace carried out (its row's VersionID)
)

var _ payload.IDStore = (*Store)(nil)

// PutIDs writes id rows in chunks of PutBatch, a few chunks in flight. The
// cells of one write share one put, so a reader sees all of them or none;
// their TTL is max(latest time − now, 0) + Retention, and a cancel without
// a time keeps for MaxDelay + Retention (a task may still come due that
// long after it), capped at 100 years.
func (h *Store) PutIDs(ctx context.Context, writes []payload.IDWrite) (err error) {
	if len(writes) == 0 {
		return nil
	}
	defer h.observe("put_ids", time.Now(), &err)
	now := time.Now().UnixMilli()
	calls := make([]hrpc.Call, 0, len(writes))
	for _, w := range writes {
		cols := map[string][]byte{}
		latest := int64(0)
		for _, c := range []struct {
			col string
			ms  int64
		}{{colIDSubmitted, w.Submitted}, {colIDAt, w.At}, {colIDMoving, w.Moving}, {colIDReplacing, w.Replacing}} {
			if c.ms != 0 { // Moving -1 clears: an 8-byte 0
				cols[c.col] = binary.BigEndian.AppendUint64(nil, uint64(max(c.ms, 0)))
				latest = max(latest, c.ms)
			}
		}
		for col, ms := range map[string]int64{colIDSubRec: w.SubmitRecorded, colIDMoveRec: w.MoveRecorded, colIDMoveFail: w.MoveFailed,
			colIDRepRec: w.ReplaceRecorded, colIDVersion: w.Version, colIDCancelRec: w.CancelRecorded} {
			if ms > 0 {
				cols[col] = binary.BigEndian.AppendUint64(nil, uint64(ms))
			}
		}
		ahead := max(latest-now, 0)
		if w.Cancel {
			cols[colIDCancelled] = []byte("1")
			if latest == 0 {
				ahead = min(h.maxDelay, maxTTL).Milliseconds()
			}
		}
		ttl := min(h.retention+time.Duration(min(ahead, maxTTL.Milliseconds()))*time.Millisecond, maxTTL)
		put, err := hrpc.NewPut(ctx, h.table, payload.IDRowKey(h.salts, w.ID),
			map[string]map[string][]byte{family: cols}, hrpc.TTL(ttl))
		if err != nil {
			return fmt.Errorf("hbase: put id row %q: %w", w.Name, err)
		}
		calls = append(calls, put)
	}
	return h.sendChunks(ctx, calls, func(int, []hrpc.RPCResult) error { return nil })
}

// GetIDs reads id rows with SendBatch, PutBatch rows a call.
func (h *Store) GetIDs(ctx context.Context, ids []uint64) (_ []payload.IDState, err error) {
	out := make([]payload.IDState, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	defer h.observe("get_ids", time.Now(), &err)
	calls := make([]hrpc.Call, len(ids))
	for i, id := range ids {
		get, err := hrpc.NewGet(ctx, h.table, payload.IDRowKey(h.salts, id))
		if err != nil {
			return nil, fmt.Errorf("hbase: get id row %d: %w", id, err)
		}
		calls[i] = get
	}
	err = h.sendChunks(ctx, calls, func(lo int, res []hrpc.RPCResult) error {
		for i, r := range res {
			resp, ok := r.Msg.(*pb.GetResponse)
			if !ok {
				return fmt.Errorf("get id row %d: unexpected response %T", ids[lo+i], r.Msg)
			}
			for _, c := range hrpc.ToLocalResult(resp.GetResult()).Cells {
				if string(c.Family) != family {
					continue
				}
				ms := func() int64 {
					if len(c.Value) != 8 {
						return 0
					}
					return int64(binary.BigEndian.Uint64(c.Value))
				}
				s := &out[lo+i]
				switch string(c.Qualifier) {
				case colIDSubmitted:
					s.Submitted = ms()
				case colIDAt:
					s.At = ms()
				case colIDMoving:
					s.Moving = ms()
				case colIDCancelled:
					s.Cancelled = true
				case colIDSubRec:
					s.SubmitRecorded = ms()
				case colIDMoveRec:
					s.MoveRecorded = ms()
				case colIDMoveFail:
					s.MoveFailed = ms()
				case colIDCancelRec:
					s.CancelRecorded = ms()
				case colIDReplacing:
					s.Replacing = ms()
				case colIDRepRec:
					s.ReplaceRecorded = ms()
				case colIDVersion:
					s.Version = ms()
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sendChunks sends calls in even chunks of at most PutBatch (chunkRows), a
// few in flight, and hands each chunk's results to fn with the chunk's
// first index.
func (h *Store) sendChunks(ctx context.Context, calls []hrpc.Call, fn func(lo int, res []hrpc.RPCResult) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	rows := h.chunkRows(len(calls))
	for lo := 0; lo < len(calls); lo += rows {
		hi := min(lo+rows, len(calls))
		g.Go(func() error {
			res, err := h.send(gctx, calls[lo:hi])
			if err != nil {
				return err
			}
			return fn(lo, res)
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("hbase: %d id rows: %w", len(calls), err)
	}
	return nil
}

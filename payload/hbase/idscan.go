package hbase

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/tsuna/gohbase/hrpc"

	"github.com/delayq/delayq/payload"
)

// ScanOps calls fn with the id of every id row that holds an op by id: a
// cancel by id alone (d:x) or a reschedule (d:r, not cleared). It scans
// each salt's id rows (salt | 0x80 ...) asking only for those two cells,
// so HBase returns the rows that have one and skips the others. The
// repair of a lost Redis index (package repair) sets their op flags again.
func (h *Store) ScanOps(ctx context.Context, fn func(id uint64) error) (err error) {
	defer h.observe("scan_ops", time.Now(), &err)
	cols := hrpc.Families(map[string][]string{family: {colIDCancelled, colIDMoving}})
	for s := range h.salts {
		start, stop := []byte{byte(s), 0x80}, []byte{byte(s), 0x81}
		scan, err := hrpc.NewScanRange(ctx, h.table, start, stop, cols, hrpc.RenewInterval(scanRenew))
		if err != nil {
			return fmt.Errorf("hbase: scan ops: %w", err)
		}
		if err := h.scanOps(h.client.Scan(scan), fn); err != nil {
			return fmt.Errorf("hbase: scan ops of salt %d: %w", s, err)
		}
	}
	return nil
}

func (h *Store) scanOps(sc hrpc.Scanner, fn func(id uint64) error) error {
	defer sc.Close()
	for {
		row, err := sc.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return shortError{err}
		}
		if len(row.Cells) == 0 || len(row.Cells[0].Row) != payload.IDRowKeyLen {
			continue
		}
		op := false
		for _, c := range row.Cells {
			switch string(c.Qualifier) {
			case colIDCancelled:
				op = true
			case colIDMoving:
				op = op || (len(c.Value) == 8 && binary.BigEndian.Uint64(c.Value) != 0)
			}
		}
		if op {
			if err := fn(binary.BigEndian.Uint64(row.Cells[0].Row[2:])); err != nil {
				return err
			}
		}
	}
}

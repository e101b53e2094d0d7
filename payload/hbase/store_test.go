package hbase_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/payload/payloadtest"
)

var quiet = slog.New(slog.DiscardHandler)

// testTable creates a table unique to this test run, pre-split into salts
// regions, and drops it when the test ends.
func testTable(t *testing.T, zk string, salts int) string {
	t.Helper()
	table := fmt.Sprintf("delayq_test_%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := hbase.CreateTable(ctx, zk, "", table, salts); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() { stacktest.DropTable(t, zk, table) })
	return table
}

// regions counts the table's regions in hbase:meta.
func regions(t *testing.T, client gohbase.Client, table string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Meta rows are "table,startkey,id" under hbase:meta's own comparator,
	// which splits rows at the commas: the table's rows are those in
	// [table",,", table" ,,") (as HBase's MetaTableAccessor scans them).
	scan, err := hrpc.NewScanRange(ctx, []byte("hbase:meta"), []byte(table+",,"), []byte(table+" ,,"),
		hrpc.Families(map[string][]string{"info": {"regioninfo"}}))
	if err != nil {
		t.Fatal(err)
	}
	sc := client.Scan(scan)
	defer sc.Close()
	n := 0
	for {
		_, err := sc.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("scan hbase:meta: %v", err)
		}
		n++
	}
}

func TestHBaseStore(t *testing.T) {
	zk := stacktest.HBase(t)
	const salts = 16
	table := testTable(t, zk, salts)
	reg := prometheus.NewRegistry()

	// By default a Get scans a salt it asks for ScanRows rows or more of
	// (LargeBatch, DenseGet) and sends point Gets for the rest; ScanRows 1
	// scans for every Get, -1 never does. MergedGets -1: no merged reads.
	type variant struct{ rows, merged int }
	for _, v := range []variant{{0, 0}, {1, 0}, {-1, 0}, {0, -1}} {
		name := "conformance"
		if v.rows != 0 {
			name += fmt.Sprintf(" ScanRows %d", v.rows)
		}
		if v.merged != 0 {
			name += fmt.Sprintf(" MergedGets %d", v.merged)
		}
		t.Run(name, func(t *testing.T) {
			payloadtest.Run(t, func(t *testing.T) payload.Store {
				cfg := hbase.Config{ZK: zk, Table: table, Salts: salts, ScanRows: v.rows, MergedGets: v.merged}
				if v == (variant{}) {
					cfg.Registerer = reg
				}
				s, err := hbase.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				return s
			})
		})
	}

	t.Run("metrics", func(t *testing.T) {
		calls := storeCalls(t, reg)
		for _, op := range []string{"put", "get", "read", "scan"} {
			if calls[op] == 0 {
				t.Errorf("no delayq_store_call_seconds{store=hbase,op=%s} samples (have %v)", op, calls)
			}
		}
	})

	t.Run("closed", func(t *testing.T) {
		s, err := hbase.New(hbase.Config{ZK: zk, Table: table, Salts: salts})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		s.Close() // idempotent
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if _, err := s.Get(ctx, []payload.Ref{{ID: 1, ExecAt: 1}}); err == nil {
			t.Error("Get after Close succeeded")
		}
	})

	t.Run("CreateTable is idempotent", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := hbase.CreateTable(ctx, zk, "", table, salts); err != nil {
			t.Errorf("CreateTable on an existing table: %v", err)
		}
	})

	t.Run("missing table", func(t *testing.T) {
		s, err := hbase.New(hbase.Config{ZK: zk, Table: table + "_missing"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err = s.Put(ctx, []payload.Task{{Name: "x", Topic: "t", ExecAt: 1}})
		if err == nil || !strings.Contains(err.Error(), "table not found") {
			t.Errorf("Put into a missing table = %v, want table not found", err)
		}
	})
}

// storeCalls returns the sample counts of delayq_store_call_seconds
// {store="hbase"} in reg, by op.
func storeCalls(t *testing.T, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "delayq_store_call_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["store"] == "hbase" {
				calls[labels["op"]] += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return calls
}

// TestHBaseFoundation checks the gohbase features the store stands on,
// against the real HBase: a table pre-split at salt boundaries (created while
// HBase may still answer PleaseHold), a batch of puts with a cell TTL read
// back with SendBatch, a scan of one salt's range, and a TTL that expires.
func TestHBaseFoundation(t *testing.T) {
	zk := stacktest.HBase(t)
	const salts = 8
	table := testTable(t, zk, salts)
	client := gohbase.NewClient(zk, gohbase.FlushInterval(0), gohbase.Logger(quiet))
	defer client.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	if got := regions(t, client, table); got != salts {
		t.Fatalf("table has %d regions, want %d (one per salt)", got, salts)
	}

	// A batch of puts with a one-hour cell TTL, and one row with a 1 s TTL.
	const n = 200
	base := time.Now().UnixMilli()
	var puts, gets []hrpc.Call
	perSalt := make([]int, salts)
	for i := range n {
		key := payload.RowKey(salts, payload.Ref{ID: uint64(i), ExecAt: base + int64(i%10)})
		perSalt[key[0]]++
		ttl := time.Hour
		if i == 0 {
			ttl = time.Second
		}
		put, err := hrpc.NewPut(ctx, []byte(table), key,
			map[string]map[string][]byte{"d": {"v": []byte(fmt.Sprint(i))}}, hrpc.TTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		puts = append(puts, put)
		get, err := hrpc.NewGet(ctx, []byte(table), key)
		if err != nil {
			t.Fatal(err)
		}
		gets = append(gets, get)
	}
	if res, ok := client.SendBatch(ctx, puts); !ok {
		t.Fatalf("SendBatch puts: %v", firstError(res))
	}
	res, ok := client.SendBatch(ctx, gets)
	if !ok {
		t.Fatalf("SendBatch gets: %v", firstError(res))
	}
	for i, r := range res {
		cells := r.Msg.(*pb.GetResponse).GetResult().GetCell()
		if len(cells) != 1 || string(cells[0].GetValue()) != fmt.Sprint(i) {
			t.Fatalf("get %d: cells %v", i, cells)
		}
	}

	// One salt's range holds exactly that salt's rows, in exec_at order.
	const salt = 3
	start := append([]byte{salt}, make([]byte, 16)...)
	stop := []byte{salt + 1}
	scan, err := hrpc.NewScanRange(ctx, []byte(table), start, stop)
	if err != nil {
		t.Fatal(err)
	}
	sc := client.Scan(scan)
	defer sc.Close()
	var rows [][]byte
	for {
		r, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("scan salt %d: %v", salt, err)
		}
		rows = append(rows, r.Cells[0].Row)
	}
	if len(rows) != perSalt[salt] {
		t.Errorf("scan of salt %d returned %d rows, want %d", salt, len(rows), perSalt[salt])
	}
	for i, row := range rows {
		if row[0] != salt || i > 0 && bytes.Compare(rows[i-1], row) >= 0 {
			t.Errorf("scan row %d = %x: wrong salt or order", i, row)
		}
	}

	// The 1 s TTL expires; its neighbours stay.
	time.Sleep(1500 * time.Millisecond)
	g0, _ := hrpc.NewGet(ctx, []byte(table), gets[0].Key())
	r0, err := client.Get(g0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r0.Cells) != 0 {
		t.Errorf("row with a 1 s TTL still has %d cells after 1.5 s", len(r0.Cells))
	}
	g1, _ := hrpc.NewGet(ctx, []byte(table), gets[1].Key())
	if r1, err := client.Get(g1); err != nil || len(r1.Cells) != 1 {
		t.Errorf("row with a 1 h TTL: %v, %v", r1, err)
	}
}

func firstError(res []hrpc.RPCResult) error {
	for _, r := range res {
		if r.Error != nil {
			return r.Error
		}
	}
	return nil
}

func TestHBaseConfigValidate(t *testing.T) {
	_, err := hbase.New(hbase.Config{Salts: 300, Retention: -1, MaxDelay: -1, PutBatch: -1, RPCQueueSize: -1})
	if err == nil {
		t.Fatal("NewHBase accepted a bad config")
	}
	for _, field := range []string{"Salts", "Retention", "MaxDelay", "PutBatch", "RPCQueueSize"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not report %s", err, field)
		}
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 5 {
		t.Fatalf("want 5 joined errors, got %v", err)
	}
	for _, e := range joined.Unwrap() {
		if !errors.Is(e, hbase.ErrConfig) {
			t.Errorf("%v does not wrap ErrConfig", e)
		}
	}
	if err := hbase.CreateTable(t.Context(), "127.0.0.1:1", "", "x", 0); !errors.Is(err, hbase.ErrConfig) {
		t.Errorf("CreateTable(0 salts) = %v, want ErrConfig", err)
	}
}

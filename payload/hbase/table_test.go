package hbase

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/payload"
)

func TestSaltsOfRegions(t *testing.T) {
	rowOf := func(salt byte) []byte {
		k := payload.RowKey(1, payload.Ref{ID: 7, ExecAt: 1_738_335_540_000})
		k[0] = salt
		return k
	}
	presplit := func(salts int) [][]byte {
		return append([][]byte{{}}, payload.SplitKeys(salts)...)
	}
	tests := []struct {
		name   string
		starts [][]byte
		want   int
	}{
		{"no regions", nil, 0},
		{"one region", presplit(1), 1},
		{"16 salts", presplit(16), 16},
		{"256 salts", presplit(256), 256},
		{"16 salts, grown regions split", append(presplit(16), rowOf(3), rowOf(15)), 16},
		{"one salt, grown region split", [][]byte{{}, rowOf(0)}, 1},
		{"regions merged", [][]byte{{}, {1}, {3}}, 0},
		{"other split keys", [][]byte{{}, {'m'}, {'z'}}, 0},
		{"a key of another length", [][]byte{{}, {1}, {2, 0}}, 0},
		{"a row key past the last salt", [][]byte{{}, {1}, rowOf(5)}, 0},
		{"a zero split key", [][]byte{{}, {0}}, 0},
		{"a split key twice", [][]byte{{}, {1}, {1}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := saltsOfRegions(tt.starts); got != tt.want {
				t.Fatalf("saltsOfRegions = %d, want %d", got, tt.want)
			}
		})
	}
}

// tableFor returns a table name unique to this test and drops the table
// when the test ends.
func tableFor(t *testing.T, zk, name string) string {
	t.Helper()
	table := fmt.Sprintf("delayq_test_%s_%d", name, time.Now().UnixNano())
	t.Cleanup(func() { stacktest.DropTable(t, zk, table) })
	return table
}

// createLegacy creates table as CreateTable did before the salt count was
// recorded: the family and the split keys, no attribute.
func createLegacy(t *testing.T, ctx context.Context, zk, table string, splits [][]byte) {
	t.Helper()
	a := newAdmin(zk, "")
	defer a.close()
	err := a.do(ctx, "create table", func(ctx context.Context) error {
		return a.ac.CreateTable(hrpc.NewCreateTable(ctx, []byte(table),
			map[string]map[string]string{family: {"VERSIONS": "1"}}, hrpc.SplitKeys(splits)))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// schemaOf reads the table's descriptor.
func schemaOf(t *testing.T, ctx context.Context, zk, table string) *pb.TableSchema {
	t.Helper()
	a := newAdmin(zk, "")
	defer a.close()
	s, err := a.schema(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recorded returns the table's SaltsAttribute, or "" without one.
func recorded(t *testing.T, ctx context.Context, zk, table string) string {
	t.Helper()
	v, _ := attribute(schemaOf(t, ctx, zk, table), SaltsAttribute)
	return v
}

// familyAttribute returns an attribute of the table's column family.
func familyAttribute(t *testing.T, ctx context.Context, zk, table, key string) string {
	t.Helper()
	for _, cf := range schemaOf(t, ctx, zk, table).GetColumnFamilies() {
		if string(cf.GetName()) != family {
			continue
		}
		for _, at := range cf.GetAttributes() {
			if string(at.GetFirst()) == key {
				return string(at.GetSecond())
			}
		}
	}
	return ""
}

func wantMismatch(t *testing.T, err error, counts ...string) {
	t.Helper()
	if !errors.Is(err, ErrSaltsMismatch) {
		t.Fatalf("err = %v, want ErrSaltsMismatch", err)
	}
	for _, c := range counts {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("error %q does not name %q", err, c)
		}
	}
}

// TestTableSalts: the salt count is recorded in the table, checked on every
// CreateTable, and derived and recorded for a table made before.
func TestTableSalts(t *testing.T) {
	zk := stacktest.HBase(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	t.Run("new table", func(t *testing.T) {
		table := tableFor(t, zk, "salts_new")
		if err := CreateTable(ctx, zk, "", table, 8); err != nil {
			t.Fatal(err)
		}
		if v := recorded(t, ctx, zk, table); v != "8" {
			t.Fatalf("%s = %q, want 8", SaltsAttribute, v)
		}
		if v := familyAttribute(t, ctx, zk, table, "DATA_BLOCK_ENCODING"); v != "ROW_INDEX_V1" {
			t.Errorf("DATA_BLOCK_ENCODING = %q, want ROW_INDEX_V1", v)
		}
		if err := CreateTable(ctx, zk, "", table, 8); err != nil {
			t.Fatalf("CreateTable again with the same salts: %v", err)
		}
		wantMismatch(t, CreateTable(ctx, zk, "", table, 16), "created with 8 salts", "configured 16")
		if n, err := TableSalts(ctx, zk, "", table); err != nil || n != 8 {
			t.Fatalf("TableSalts = %d, %v; want 8", n, err)
		}
	})

	t.Run("legacy pre-split table", func(t *testing.T) {
		table := tableFor(t, zk, "salts_legacy")
		createLegacy(t, ctx, zk, table, payload.SplitKeys(4))
		if n, err := TableSalts(ctx, zk, "", table); err != nil || n != 4 {
			t.Fatalf("TableSalts of a 4-salt legacy table = %d, %v", n, err)
		}
		wantMismatch(t, CreateTable(ctx, zk, "", table, 16), "pre-split for 4 salts", "configured 16")
		if v := recorded(t, ctx, zk, table); v != "" {
			t.Fatalf("a refused CreateTable recorded %s = %q", SaltsAttribute, v)
		}
		if err := CreateTable(ctx, zk, "", table, 4); err != nil {
			t.Fatalf("CreateTable with the derived salts: %v", err)
		}
		if v := recorded(t, ctx, zk, table); v != "4" {
			t.Fatalf("%s = %q after CreateTable, want 4", SaltsAttribute, v)
		}
		wantMismatch(t, CreateTable(ctx, zk, "", table, 5), "created with 4 salts", "configured 5")
		// The table still works after the schema change.
		s, err := New(Config{ZK: zk, Table: table, Salts: 4, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		task := payload.Task{Name: "x", ID: payload.TaskID("x"), Topic: "t", ExecAt: time.Now().UnixMilli()}
		if err := s.Put(ctx, []payload.Task{task}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, []payload.Ref{task.Ref()})
		if err != nil || got[0] == nil || got[0].Topic != "t" {
			t.Fatalf("Get after the schema change = %v, %v", got, err)
		}
	})

	t.Run("legacy table of unknown layout", func(t *testing.T) {
		table := tableFor(t, zk, "salts_unknown")
		createLegacy(t, ctx, zk, table, [][]byte{{2}, {5}})
		if n, err := TableSalts(ctx, zk, "", table); err != nil || n != 0 {
			t.Fatalf("TableSalts = %d, %v; want 0 (unknown)", n, err)
		}
		if err := CreateTable(ctx, zk, "", table, 6); err != nil {
			t.Fatalf("CreateTable on a table of unknown layout: %v", err)
		}
		if v := recorded(t, ctx, zk, table); v != "6" {
			t.Fatalf("%s = %q, want 6", SaltsAttribute, v)
		}
		wantMismatch(t, CreateTable(ctx, zk, "", table, 16), "created with 6 salts", "configured 16")
	})

	t.Run("missing table", func(t *testing.T) {
		if _, err := TableSalts(ctx, zk, "", fmt.Sprintf("delayq_test_none_%d", time.Now().UnixNano())); err == nil {
			t.Fatal("TableSalts of a missing table succeeded")
		}
	})
}

package hbase_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
)

// TestHBaseLayouts checks that a task is written as one d:e cell, that rows
// in the layout before it (d:t, d:n, d:k, d:v, d:h, written here with raw
// puts) are still read by Get and Scan, that a cancel marker wins over
// either layout in either order, and that d:e wins over old cells in the
// same row.
func TestHBaseLayouts(t *testing.T) {
	zk := stacktest.HBase(t)
	const salts = 4
	table := testTable(t, zk, salts)
	s, err := hbase.New(hbase.Config{ZK: zk, Table: table, Salts: salts, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	client := gohbase.NewClient(zk, gohbase.FlushInterval(0), gohbase.Logger(quiet))
	defer client.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	at := time.Now().Add(time.Hour).UnixMilli()
	mk := func(name string) payload.Task {
		return payload.Task{
			ID: payload.TaskID(name), Name: name, Topic: "topic-" + name, ExecAt: at,
			Key: []byte("k-" + name), Value: []byte{0, 1, 0xff},
			Headers: []payload.Header{{Key: "h", Value: []byte("x")}, {Key: "nil"}},
		}
	}
	rawPut := func(task payload.Task, cols map[string][]byte) {
		t.Helper()
		put, err := hrpc.NewPut(ctx, []byte(table), payload.RowKey(salts, task.Ref()),
			map[string]map[string][]byte{"d": cols}, hrpc.TTL(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Put(put); err != nil {
			t.Fatalf("raw put %q: %v", task.Name, err)
		}
	}
	oldCells := func(task payload.Task) map[string][]byte {
		return map[string][]byte{
			"t": []byte(task.Topic), "n": []byte(task.Name), "k": task.Key, "v": task.Value,
			"h": payload.EncodeHeaders(task.Headers),
		}
	}
	cancelled := func(task payload.Task) payload.Task {
		task.Cancel = true
		return task
	}
	storePut := func(tasks ...payload.Task) {
		t.Helper()
		if err := s.Put(ctx, tasks); err != nil {
			t.Fatal(err)
		}
	}

	// old: the old layout alone.
	old := mk("old")
	rawPut(old, oldCells(old))
	// oldNil: the old layout with nil key and value (no d:k, d:v, d:h).
	oldNil := payload.Task{ID: payload.TaskID("old-nil"), Name: "old-nil", Topic: "t", ExecAt: at}
	rawPut(oldNil, map[string][]byte{"t": []byte("t"), "n": []byte("old-nil")})
	// oldThenCancel: old layout, then a cancel through the store.
	oldThenCancel := mk("old-then-cancel")
	rawPut(oldThenCancel, oldCells(oldThenCancel))
	storePut(payload.Task{ID: oldThenCancel.ID, Name: oldThenCancel.Name, ExecAt: at, Cancel: true})
	// cancelThenOld: a cancel through the store, then old-layout cells.
	cancelThenOld := mk("cancel-then-old")
	storePut(payload.Task{ID: cancelThenOld.ID, Name: cancelThenOld.Name, ExecAt: at, Cancel: true})
	rawPut(cancelThenOld, oldCells(cancelThenOld))
	// mixed: old cells of another content, then the store's d:e wins.
	mixed := mk("mixed")
	stale := mk("mixed")
	stale.Topic, stale.Key, stale.Value, stale.Headers = "stale", []byte("stale"), nil, nil
	rawPut(stale, oldCells(stale))
	storePut(mixed)
	// fresh: written by the store only.
	fresh := mk("fresh")
	storePut(fresh)
	// legacy: written by a store with LegacyCells (a rolling upgrade).
	legacyStore, err := hbase.New(hbase.Config{ZK: zk, Table: table, Salts: salts, Logger: quiet, LegacyCells: true})
	if err != nil {
		t.Fatal(err)
	}
	defer legacyStore.Close()
	legacy := mk("legacy")
	if err := legacyStore.Put(ctx, []payload.Task{legacy}); err != nil {
		t.Fatal(err)
	}
	lget, err := hrpc.NewGet(ctx, []byte(table), payload.RowKey(salts, legacy.Ref()))
	if err != nil {
		t.Fatal(err)
	}
	lres, err := client.Get(lget)
	if err != nil {
		t.Fatal(err)
	}
	var quals []string
	for _, c := range lres.Cells {
		quals = append(quals, string(c.Qualifier))
	}
	slices.Sort(quals)
	if !slices.Equal(quals, []string{"h", "k", "n", "t", "v"}) {
		t.Errorf("LegacyCells row has cells %v, want h k n t v (no e)", quals)
	}

	// A task put writes exactly one cell, d:e.
	get, err := hrpc.NewGet(ctx, []byte(table), payload.RowKey(salts, fresh.Ref()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Get(get)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 1 || string(res.Cells[0].Family) != "d" || string(res.Cells[0].Qualifier) != "e" {
		t.Errorf("task row has %d cells, want one d:e", len(res.Cells))
		for _, c := range res.Cells {
			t.Logf("  %s:%s", c.Family, c.Qualifier)
		}
	}

	want := []payload.Task{
		old, oldNil, cancelled(oldThenCancel), cancelled(cancelThenOld), mixed, fresh, legacy,
	}
	refs := make([]payload.Ref, len(want))
	byID := map[uint64]payload.Task{}
	for i, w := range want {
		refs[i] = w.Ref()
		byID[w.ID] = w
	}
	got, err := s.Get(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if got[i] == nil || !reflect.DeepEqual(*got[i], w) {
			t.Errorf("Get %q:\n got %+v\nwant %+v", w.Name, got[i], w)
		}
	}
	n := 0
	err = s.Scan(ctx, at, at+1, func(task payload.Task) error {
		n++
		if w, ok := byID[task.ID]; !ok || !reflect.DeepEqual(task, w) {
			t.Errorf("Scan %q:\n got %+v\nwant %+v", task.Name, task, w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("Scan returned %d rows, want %d", n, len(want))
	}
}

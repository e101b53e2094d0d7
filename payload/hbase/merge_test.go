package hbase_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
)

// TestHBaseMergedGets runs many Gets at once, as a scanner's workers do,
// and checks that each gets exactly its own rows whether they are read
// together (the default) or alone (MergedGets -1); that a row that is no
// task fails only the Get that asks for it, and a Get whose ctx has ended
// only itself; and, merged, that the Gets took fewer reads than there were
// Gets.
func TestHBaseMergedGets(t *testing.T) {
	zk := stacktest.HBase(t)
	const salts = 4
	table := testTable(t, zk, salts)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	at := time.Now().Add(time.Hour).Truncate(time.Second).UnixMilli()
	tasks := make([]payload.Task, 4000)
	for i := range tasks {
		name := fmt.Sprintf("merged-%d", i)
		tasks[i] = payload.Task{ID: payload.TaskID(name), Name: name, Topic: "t", ExecAt: at + int64(i%1000),
			Value: []byte(name)}
	}
	writer, err := hbase.New(hbase.Config{ZK: zk, Table: table, Salts: salts, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if err := writer.Put(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	// corrupt: a d:e cell of an envelope version no reader knows.
	corrupt := payload.Ref{ID: 7, ExecAt: at + 500}
	client := gohbase.NewClient(zk, gohbase.FlushInterval(0), gohbase.Logger(quiet))
	defer client.Close()
	put, err := hrpc.NewPut(ctx, []byte(table), payload.RowKey(salts, corrupt),
		map[string]map[string][]byte{"d": {"e": {0xee}}}, hrpc.TTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(put); err != nil {
		t.Fatal(err)
	}

	const gets = 32
	for _, merged := range []int{0, -1} {
		t.Run(fmt.Sprintf("MergedGets %d", merged), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			s, err := hbase.New(hbase.Config{ZK: zk, Table: table, Salts: salts, MergedGets: merged,
				Logger: quiet, Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Get g asks for every task i with i%gets == g and one row
			// that is not stored; Get 0 also for the corrupt row, Get 1
			// with a ctx that has ended.
			refs := make([][]payload.Ref, gets)
			for i, task := range tasks {
				refs[i%gets] = append(refs[i%gets], task.Ref())
			}
			for g := range refs {
				refs[g] = append(refs[g], payload.Ref{ID: uint64(1e6 + g), ExecAt: at + 1})
			}
			refs[0] = append(refs[0], corrupt)
			ended, end := context.WithCancel(ctx)
			end()

			start := make(chan struct{})
			out := make([][]*payload.Task, gets)
			errs := make([]error, gets)
			var wg sync.WaitGroup
			for g := range gets {
				wg.Go(func() {
					<-start
					c := ctx
					if g == 1 {
						c = ended
					}
					out[g], errs[g] = s.Get(c, refs[g])
				})
			}
			close(start)
			wg.Wait()

			if !errors.Is(errs[0], payload.ErrEnvelope) {
				t.Errorf("Get with the corrupt row: %v, want ErrEnvelope", errs[0])
			}
			if !errors.Is(errs[1], context.Canceled) {
				t.Errorf("Get with an ended ctx: %v, want context.Canceled", errs[1])
			}
			for g := 2; g < gets; g++ {
				if errs[g] != nil {
					t.Errorf("Get %d: %v", g, errs[g])
					continue
				}
				if len(out[g]) != len(refs[g]) {
					t.Fatalf("Get %d: %d tasks for %d refs", g, len(out[g]), len(refs[g]))
				}
				last := len(out[g]) - 1
				if out[g][last] != nil {
					t.Errorf("Get %d: row not stored read as %+v", g, out[g][last])
				}
				for i, task := range out[g][:last] {
					want := tasks[i*gets+g]
					if task == nil || task.Name != want.Name || string(task.Value) != want.Name || task.Ref() != want.Ref() {
						t.Errorf("Get %d ref %d: %+v, want %s", g, i, task, want.Name)
					}
				}
			}

			calls := storeCalls(t, reg)
			if calls["get"] != gets {
				t.Errorf("%d get calls observed, want %d", calls["get"], gets)
			}
			if merged < 0 && calls["read"] != 0 {
				t.Errorf("MergedGets -1: %d merged reads", calls["read"])
			}
			if merged == 0 && (calls["read"] == 0 || calls["read"] >= gets-1) {
				t.Errorf("%d merged reads for %d Gets at once (one with an ended ctx), want fewer", calls["read"], gets)
			}
		})
	}
}

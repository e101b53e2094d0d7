package zset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

func TestAdd(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{Shards: 4})
	now := t0.Add(90 * time.Second) // inside segment 15:00
	future := Entry{ID: 1, ExecAt: ms(t0.Add(10 * time.Minute))}
	current := Entry{ID: 2, ExecAt: ms(t0.Add(100 * time.Second))}
	past := Entry{ID: 3, ExecAt: ms(t0.Add(10 * time.Second))}     // segment 14:59 ended
	endsNow := Entry{ID: 4, ExecAt: ms(t0.Add(-30 * time.Second))} // segment 14:58
	if err := ix.Writer().Add(ctx, now, []Entry{future, current, past, endsNow}); err != nil {
		t.Fatal(err)
	}

	// Registry holds the future and current segments, never the ended ones.
	reg, err := c.ZRangeWithScores(ctx, ix.Registry(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	wantReg := []redis.Z{
		{Member: "202501311500", Score: float64(ms(t0.Add(time.Minute)))},
		{Member: "202501311509", Score: float64(ms(t0.Add(10 * time.Minute)))},
	}
	if !slices.Equal(reg, wantReg) {
		t.Fatalf("registry = %v, want %v", reg, wantReg)
	}

	for _, tc := range []struct {
		e   Entry
		key string
	}{
		{future, ix.Key(future)},
		{current, ix.Key(current)},
		{past, fmt.Sprintf("delayq:202501311500:%d", ix.shard(past.ID))},
		{endsNow, fmt.Sprintf("delayq:202501311500:%d", ix.shard(endsNow.ID))},
	} {
		got := indexed(t, ix, c, tc.key)
		if got[strconv.FormatUint(tc.e.ID, 10)] != float64(tc.e.ExecAt) {
			t.Errorf("entry %d: %s holds %v, want score %d", tc.e.ID, tc.key, got, tc.e.ExecAt)
		}
	}

	// Same id + same exec_at again is one member.
	if err := ix.Writer().Add(ctx, now, []Entry{future}); err != nil {
		t.Fatal(err)
	}
	if n := c.ZCard(ctx, ix.Key(future)).Val(); n != 1 {
		t.Fatalf("after re-add %s holds %d members, want 1", ix.Key(future), n)
	}
}

func TestAddBadEntry(t *testing.T) { testAddBadEntry(t, miniIndex) }

// testAddBadEntry: Add refuses bad entries one by one and indexes the rest.
func testAddBadEntry(t *testing.T, newIndex newIndexFunc) {
	ctx := context.Background()
	ix, c := newIndex(t, Config{Shards: 1})
	good := ms(t0.Add(time.Minute))
	entries := []Entry{
		{ID: 1, ExecAt: good},
		{ID: 2, ExecAt: 0},         // the epoch
		{ID: 3, ExecAt: good + 1},  //
		{ID: 4, ExecAt: -5},        // before the epoch
		{ID: 5, ExecAt: 1<<53 + 1}, // not exact in a score
		{ID: MaxID + 1, ExecAt: good},
		{ID: MaxID, ExecAt: good + 2},
	}
	err := ix.Writer().Add(ctx, t0, entries)
	if !errors.Is(err, ErrBadEntry) {
		t.Fatalf("Add = %v, want ErrBadEntry", err)
	}
	var bad *BadEntryError
	if !errors.As(err, &bad) {
		t.Fatalf("Add = %T %v, want a *BadEntryError", err, err)
	}
	if want := []int{1, 3, 4, 5}; !slices.Equal(bad.Indexes, want) || len(bad.Reasons) != len(want) {
		t.Fatalf("refused %v (reasons %q), want %v", bad.Indexes, bad.Reasons, want)
	}
	for _, want := range []string{"#1 id 2: exec_at 0 is not after the unix epoch", "#3 id 4", "#4 id 5", "and 1 more"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The good ones are indexed all the same.
	got := indexed(t, ix, c, ix.Key(entries[0]))
	want := map[string]float64{"1": float64(good), "3": float64(good + 1), strconv.FormatUint(MaxID, 10): float64(good + 2)}
	if !maps.Equal(got, want) {
		t.Fatalf("indexed %v, want %v", got, want)
	}
	// Nothing but bad entries: no Redis call at all, still the typed error.
	if err := ix.Writer().Add(ctx, t0, entries[1:2]); !errors.As(err, &bad) || !slices.Equal(bad.Indexes, []int{0}) {
		t.Fatalf("Add(one bad entry) = %v", err)
	}
	// All good: a nil error, not a typed nil.
	if err := ix.Writer().Add(ctx, t0, entries[:1]); err != nil {
		t.Fatalf("Add(good) = %v", err)
	}
}

// A batch far over MaxArgs on one zset is cut into commands of at most
// MaxArgs arguments, by ZADD NX while the segment is sparse and by
// placeScript when it is not.
func TestAddLargeBatchChunks(t *testing.T) {
	const n = MaxArgs*2 + 7 // needs several commands on one key
	for _, tc := range []struct {
		name string
		fill int
		cmd  string
	}{{"sparse", 1 << 20, "ZADD"}, {"walk", 12_000, "EVALSHA"}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ix, m, c := newTestIndex(t, Config{Shards: 1, Fill: tc.fill})
			entries := make([]Entry, n)
			for i := range entries {
				entries[i] = Entry{ID: uint64(i + 1), ExecAt: ms(t0.Add(time.Hour)) + int64(i%1000)}
			}
			var sent []int // arguments after the key of every ZADD or script run
			m.Server().SetPreHook(func(_ *server.Peer, cmd string, args ...string) bool {
				switch {
				case cmd == tc.cmd && cmd == "ZADD" && args[0] != ix.Registry():
					sent = append(sent, len(args)-1)
				case cmd == tc.cmd || cmd == "EVAL" && tc.cmd == "EVALSHA":
					sent = append(sent, len(args)-3)
				}
				return false
			})
			if err := ix.Writer().Add(ctx, t0, entries); err != nil {
				t.Fatal(err)
			}
			if got := c.ZCard(ctx, ix.Key(entries[0])).Val(); got != n {
				t.Fatalf("zset holds %d, want %d", got, n)
			}
			if len(sent) < 5 {
				t.Fatalf("Add sent %d %s, want at least 5", len(sent), tc.cmd)
			}
			for _, args := range sent {
				if args > MaxArgs {
					t.Fatalf("a %s carried %d arguments, cap is %d", tc.cmd, args, MaxArgs)
				}
			}
		})
	}
}

func BenchmarkPlan(b *testing.B) {
	ix, err := New(redis.NewClient(&redis.Options{}), Config{})
	if err != nil {
		b.Fatal(err)
	}
	nowMs := ms(t0)
	for _, size := range []int{100, 1_000, 10_000} {
		entries := make([]Entry, size)
		for i := range entries {
			// Snowflake-like ids due over the next 10 minutes.
			entries[i] = Entry{ID: uint64(1<<40+i) << 12, ExecAt: nowMs + int64(i%600)*1000}
		}
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if p := ix.Writer().plan(nowMs, entries); p.bad != nil {
					b.Fatal(p.bad)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/entry")
		})
	}
}

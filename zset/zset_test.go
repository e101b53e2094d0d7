package zset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// t0 is a segment boundary for 1-minute segments: 2025-01-31 14:59:00 UTC.
var t0 = time.Date(2025, 1, 31, 14, 59, 0, 0, time.UTC)

func ms(t time.Time) int64 { return t.UnixMilli() }

func newTestIndex(t *testing.T, cfg Config) (*Index, *miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	ix, err := New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ix, m, c
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"zero is default", Config{}, false},
		{"seconds segment", Config{Segment: 5 * time.Second}, false},
		{"one day", Config{Segment: 24 * time.Hour, Shards: 1}, false},
		{"sub-second segment", Config{Segment: 1500 * time.Millisecond}, true},
		{"segment too long", Config{Segment: 25 * time.Hour}, true},
		{"negative shards", Config{Shards: -1}, true},
		{"too many shards", Config{Shards: 1<<16 + 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.setDefaults()
			if err := cfg.Validate(); (err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
	t.Run("reports every problem", func(t *testing.T) {
		cfg := Config{Prefix: "x", Segment: time.Millisecond, Shards: -3}
		err := cfg.Validate()
		if err == nil {
			t.Fatal("no error")
		}
		var joined interface{ Unwrap() []error }
		if !errors.As(err, &joined) || len(joined.Unwrap()) != 2 {
			t.Fatalf("want 2 joined errors, got %v", err)
		}
		for _, e := range joined.Unwrap() {
			if !errors.Is(e, ErrConfig) {
				t.Errorf("%v does not wrap ErrConfig", e)
			}
		}
	})
	if _, err := New(nil, Config{}); err == nil {
		t.Fatal("New(nil client) succeeded")
	}
}

func TestKey(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		execAt  time.Time
		wantSeg string
	}{
		{"minute", Config{}, t0.Add(59*time.Second + 999*time.Millisecond), "202501311459"},
		{"minute boundary", Config{}, t0.Add(time.Minute), "202501311500"},
		{"five minutes", Config{Segment: 5 * time.Minute}, t0.Add(30 * time.Second), "202501311455"},
		{"seconds", Config{Segment: 10 * time.Second}, t0.Add(25 * time.Second), "20250131145920"},
		{"hour", Config{Segment: time.Hour, Prefix: "p"}, t0, "202501311400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, _, _ := newTestIndex(t, tt.cfg)
			e := Entry{ID: 42, ExecAt: ms(tt.execAt)}
			prefix := tt.cfg.Prefix
			if prefix == "" {
				prefix = DefaultPrefix
			}
			want := fmt.Sprintf("%s:%s:%d", prefix, tt.wantSeg, ix.shard(42))
			if got := ix.Key(e); got != want {
				t.Fatalf("Key = %q, want %q", got, want)
			}
		})
	}
}

func TestShardSpread(t *testing.T) {
	ix, _, _ := newTestIndex(t, Config{Shards: 64})
	// Snowflake-like ids: time in the high bits, sequence in the low bits,
	// a step of 4096 (one sequence space) between neighbours. id % 64 would
	// put them all in shard 0.
	counts := make([]int, 64)
	for i := range 64 * 100 {
		counts[ix.shard(uint64(i)<<22|1)]++
	}
	for s, n := range counts {
		if n < 50 || n > 150 {
			t.Fatalf("shard %d holds %d of 6400 (want about 100): %v", s, n, counts)
		}
	}
}

func members(t *testing.T, c redis.UniversalClient, key string) map[string]float64 {
	t.Helper()
	zs, err := c.ZRangeWithScores(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, z := range zs {
		out[z.Member.(string)] = z.Score
	}
	return out
}

func TestAdd(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{Shards: 4})
	now := t0.Add(90 * time.Second) // inside segment 15:00
	future := Entry{ID: 1, ExecAt: ms(t0.Add(10 * time.Minute))}
	current := Entry{ID: 2, ExecAt: ms(t0.Add(100 * time.Second))}
	past := Entry{ID: 3, ExecAt: ms(t0.Add(10 * time.Second))}     // segment 14:59 ended
	endsNow := Entry{ID: 4, ExecAt: ms(t0.Add(-30 * time.Second))} // segment 14:58
	if err := ix.Add(ctx, now, []Entry{future, current, past, endsNow}); err != nil {
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
		got := members(t, c, tc.key)
		if got[strconv.FormatUint(tc.e.ID, 10)] != float64(tc.e.ExecAt) {
			t.Errorf("entry %d: %s holds %v, want score %d", tc.e.ID, tc.key, got, tc.e.ExecAt)
		}
	}

	// Same id + same exec_at again is one member.
	if err := ix.Add(ctx, now, []Entry{future}); err != nil {
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
	err := ix.Add(ctx, t0, entries)
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
	got := members(t, c, ix.Key(entries[0]))
	want := map[string]float64{"1": float64(good), "3": float64(good + 1), strconv.FormatUint(MaxID, 10): float64(good + 2)}
	if !maps.Equal(got, want) {
		t.Fatalf("indexed %v, want %v", got, want)
	}
	// Nothing but bad entries: no Redis call at all, still the typed error.
	if err := ix.Add(ctx, t0, entries[1:2]); !errors.As(err, &bad) || !slices.Equal(bad.Indexes, []int{0}) {
		t.Fatalf("Add(one bad entry) = %v", err)
	}
	// All good: a nil error, not a typed nil.
	if err := ix.Add(ctx, t0, entries[:1]); err != nil {
		t.Fatalf("Add(good) = %v", err)
	}
}

// newIndexFunc returns an index and its client for a test.
type newIndexFunc func(*testing.T, Config) (*Index, redis.UniversalClient)

// miniIndex is an index on a miniredis of its own.
func miniIndex(t *testing.T, cfg Config) (*Index, redis.UniversalClient) {
	ix, _, c := newTestIndex(t, cfg)
	return ix, c
}

func TestReusedID(t *testing.T) { testReusedID(t, miniIndex) }

// testReusedID: two tasks with one id, due in one zset (issue 11, "reused
// ids"), are both indexed, each due at its own time, and removing one leaves
// the other.
func testReusedID(t *testing.T, newIndex newIndexFunc) {
	ctx := context.Background()
	at := func(d time.Duration) int64 { return ms(t0.Add(time.Hour + d)) }
	first := Entry{ID: 7, ExecAt: at(10 * time.Second)}
	second := Entry{ID: 7, ExecAt: at(40 * time.Second)}
	other := Entry{ID: 8, ExecAt: at(20 * time.Second)}
	for _, tt := range []struct {
		name string
		adds [][]Entry // Add calls in order
	}{
		{"first then second", [][]Entry{{first, other}, {second}}},
		{"second then first", [][]Entry{{second}, {other, first}}},
		{"one call", [][]Entry{{first, other, second}}},
		{"each twice", [][]Entry{{first, first, other}, {second, first, second}, {other, second}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ix, c := newIndex(t, Config{Shards: 1})
			key := ix.Key(first)
			for _, es := range tt.adds {
				if err := ix.Add(ctx, t0, es); err != nil {
					t.Fatal(err)
				}
			}
			if n := c.ZCard(ctx, key).Val(); n != 3 {
				t.Fatalf("%s holds %d members %v, want 3", key, n, members(t, c, key))
			}
			due := func(until int64) []Entry {
				t.Helper()
				es, err := ix.Due(ctx, key, until, 0)
				if err != nil {
					t.Fatal(err)
				}
				return es
			}
			if got, want := due(at(30*time.Second)), []Entry{first, other}; !slices.Equal(got, want) {
				t.Fatalf("due by +30s = %v, want %v", got, want)
			}
			if got, want := due(at(time.Minute)), []Entry{first, other, second}; !slices.Equal(got, want) {
				t.Fatalf("due by +60s = %v, want %v", got, want)
			}
			for _, e := range []Entry{first, second} {
				if ok, err := ix.Pending(ctx, e); err != nil || !ok {
					t.Fatalf("Pending(%v) = %v, %v", e, ok, err)
				}
			}

			// The scanner read the second task and removes it; the first stays.
			if err := ix.Remove(ctx, key, []Entry{second}); err != nil {
				t.Fatal(err)
			}
			if got, want := due(at(time.Minute)), []Entry{first, other}; !slices.Equal(got, want) {
				t.Fatalf("after removing %v: due = %v, want %v", second, got, want)
			}
			if ok, _ := ix.Pending(ctx, second); ok {
				t.Fatalf("Pending(%v) after its Remove", second)
			}
			// A stale Remove of the second again removes nothing.
			if err := ix.Remove(ctx, key, []Entry{second}); err != nil {
				t.Fatal(err)
			}
			if err := ix.Remove(ctx, key, []Entry{first, other}); err != nil {
				t.Fatal(err)
			}
			if n := c.ZCard(ctx, key).Val(); n != 0 {
				t.Fatalf("after removing all %s holds %v", key, members(t, c, key))
			}
		})
	}

	// The scanner's Remove of (id, t2) does not delete a fresh (id, t1)
	// added after it read (id, t2).
	t.Run("remove races a new task", func(t *testing.T) {
		ix, _ := newIndex(t, Config{Shards: 1})
		key := ix.Key(first)
		if err := ix.Add(ctx, t0, []Entry{second}); err != nil {
			t.Fatal(err)
		}
		read, err := ix.Due(ctx, key, second.ExecAt, 0)
		if err != nil || !slices.Equal(read, []Entry{second}) {
			t.Fatalf("Due = %v, %v", read, err)
		}
		if err := ix.Add(ctx, t0, []Entry{first}); err != nil {
			t.Fatal(err)
		}
		if err := ix.Remove(ctx, key, read); err != nil {
			t.Fatal(err)
		}
		if got, _ := ix.Due(ctx, key, second.ExecAt, 0); !slices.Equal(got, []Entry{first}) {
			t.Fatalf("due after the race = %v, want %v", got, []Entry{first})
		}
	})
}

// The common case stays compact: distinct ids are plain decimal members
// (listpack integers), and adding them again changes nothing.
func TestMembersStayPlain(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{Shards: 1})
	var entries []Entry
	for i := range 100 {
		entries = append(entries, Entry{ID: uint64(1000 + i), ExecAt: ms(t0.Add(time.Minute)) + int64(i)})
	}
	for i := range 3 {
		if err := ix.Add(ctx, t0, entries); err != nil {
			t.Fatal(err)
		}
		got := members(t, c, ix.Key(entries[0]))
		if len(got) != 100 {
			t.Fatalf("after adding %d times the zset holds %d, want 100", i+1, len(got))
		}
		for member := range got {
			if _, err := strconv.ParseUint(member, 10, 64); err != nil {
				t.Fatalf("member %q is not a plain id", member)
			}
		}
	}
}

func TestModel(t *testing.T) { testModel(t, miniIndex) }

// testModel runs random Add, Due and Remove calls on a few ids and due
// times in one zset and compares what Due returns with a set of tasks.
func testModel(t *testing.T, newIndex newIndexFunc) {
	ctx := context.Background()
	ix, _ := newIndex(t, Config{Shards: 1})
	rng := rand.New(rand.NewPCG(1, 2))
	base := ms(t0.Add(time.Hour))
	random := func() Entry {
		return Entry{ID: uint64(1 + rng.IntN(4)), ExecAt: base + int64(rng.IntN(4))*1000}
	}
	key := ix.Key(Entry{ID: 1, ExecAt: base})
	model := map[Entry]bool{}
	for step := range 2000 {
		switch op := rng.IntN(3); op {
		case 0:
			es := []Entry{random(), random()}
			if err := ix.Add(ctx, t0, es); err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				model[e] = true
			}
		case 1:
			es := []Entry{random()}
			if rng.IntN(2) == 0 { // what a scanner read, or a stale read
				if due, _ := ix.Due(ctx, key, base+int64(rng.IntN(4))*1000, 1+rng.IntN(3)); len(due) > 0 {
					es = due
				}
			}
			if err := ix.Remove(ctx, key, es); err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				delete(model, e)
			}
		case 2:
			until := base + int64(rng.IntN(4))*1000
			got, err := ix.Due(ctx, key, until, 0)
			if err != nil {
				t.Fatal(err)
			}
			var want []Entry
			for e := range model {
				if e.ExecAt <= until {
					want = append(want, e)
				}
			}
			less := func(a, b Entry) int {
				return cmp.Or(cmp.Compare(a.ExecAt, b.ExecAt), cmp.Compare(a.ID, b.ID))
			}
			slices.SortFunc(got, less)
			slices.SortFunc(want, less)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: Due(%d) = %v, want %v", step, until, got, want)
			}
		}
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
			if err := ix.Add(ctx, t0, entries); err != nil {
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

func TestDueKeysAndDue(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{Shards: 8})
	now := t0
	var entries []Entry
	for i := range 40 {
		entries = append(entries, Entry{ID: uint64(1000 + i), ExecAt: ms(t0) + int64(i)*1000}) // 14:59:00..14:59:39
	}
	later := Entry{ID: 7, ExecAt: ms(t0.Add(5 * time.Minute))}
	entries = append(entries, later)
	if err := ix.Add(ctx, now, entries); err != nil {
		t.Fatal(err)
	}

	until := ms(t0) + 9_000 // ids 1000..1009 are due
	keys, err := ix.DueKeys(ctx, until)
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := map[string]bool{}
	for _, e := range entries[:10] {
		wantKeys[ix.Key(e)] = true
	}
	if len(keys) != len(wantKeys) {
		t.Fatalf("DueKeys = %v, want the %d keys of %v", keys, len(wantKeys), wantKeys)
	}
	for _, k := range keys {
		if !wantKeys[k] {
			t.Fatalf("DueKeys returned %s, which holds nothing due", k)
		}
	}
	if !slices.IsSorted(keys) {
		t.Fatalf("DueKeys not ordered: %v", keys)
	}

	// Due across all keys returns exactly the due entries, lowest score first.
	var got []Entry
	for _, k := range keys {
		es, err := ix.Due(ctx, k, until, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSortedFunc(es, func(a, b Entry) int { return int(a.ExecAt - b.ExecAt) }) {
			t.Fatalf("Due(%s) not ordered by score: %v", k, es)
		}
		got = append(got, es...)
	}
	slices.SortFunc(got, func(a, b Entry) int { return int(a.ExecAt - b.ExecAt) })
	if !slices.Equal(got, entries[:10]) {
		t.Fatalf("Due = %v, want %v", got, entries[:10])
	}

	// The segment of `later` starts after until: not listed at all.
	keys, err = ix.DueKeys(ctx, ms(t0.Add(5*time.Minute))-1)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(keys, ix.Key(later)) {
		t.Fatalf("DueKeys lists %s before its segment starts", ix.Key(later))
	}
	keys, _ = ix.DueKeys(ctx, later.ExecAt)
	if !slices.Contains(keys, ix.Key(later)) {
		t.Fatalf("DueKeys(%d) = %v, misses %s", later.ExecAt, keys, ix.Key(later))
	}

	// LIMIT.
	one := Entry{ID: 1, ExecAt: ms(t0.Add(time.Hour))}
	key := ix.Key(one)
	for i := range 5 {
		c.ZAdd(ctx, key, redis.Z{Score: float64(one.ExecAt + int64(i)), Member: strconv.Itoa(i + 1)})
	}
	es, err := ix.Due(ctx, key, one.ExecAt+10, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{1, one.ExecAt}, {2, one.ExecAt + 1}, {3, one.ExecAt + 2}}
	if !slices.Equal(es, want) {
		t.Fatalf("Due limit 3 = %v, want %v", es, want)
	}
}

func TestDueMemberForms(t *testing.T) {
	ctx := context.Background()
	const key = "delayq:202501311459:0"
	t.Run("both forms", func(t *testing.T) {
		ix, _, c := newTestIndex(t, Config{})
		c.ZAdd(ctx, key,
			redis.Z{Score: 10, Member: "5"},
			redis.Z{Score: 20, Member: "5@20"},
			redis.Z{Score: 20, Member: "6"},
			redis.Z{Score: 30, Member: "6@30"},
			redis.Z{Score: 30, Member: "6"[:1] + "@30"}, // the same member
		)
		got, err := ix.Due(ctx, key, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []Entry{{5, 10}, {5, 20}, {6, 20}, {6, 30}}
		if !slices.Equal(got, want) {
			t.Fatalf("Due = %v, want %v", got, want)
		}
	})
	// Both forms of one task (see the package doc) read as one entry.
	t.Run("duplicate forms", func(t *testing.T) {
		ix, _, c := newTestIndex(t, Config{})
		c.ZAdd(ctx, key, redis.Z{Score: 20, Member: "5"}, redis.Z{Score: 20, Member: "5@20"}, redis.Z{Score: 20, Member: "51"})
		got, err := ix.Due(ctx, key, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := []Entry{{5, 20}, {51, 20}}; !slices.Equal(got, want) {
			t.Fatalf("Due = %v, want %v", got, want)
		}
		// A limit that the second form would fill: still two entries.
		if got, err := ix.Due(ctx, key, 100, 2); err != nil || !slices.Equal(got, []Entry{{5, 20}, {51, 20}}) {
			t.Fatalf("Due limit 2 = %v, %v; want both tasks", got, err)
		}
		if got, err := ix.Due(ctx, key, 100, 1); err != nil || !slices.Equal(got, []Entry{{5, 20}}) {
			t.Fatalf("Due limit 1 = %v, %v; want the first task", got, err)
		}
		if err := ix.Remove(ctx, key, got[:1]); err != nil {
			t.Fatal(err)
		}
		if left := members(t, c, key); !maps.Equal(left, map[string]float64{"51": 20}) {
			t.Fatalf("Remove left %v, want only 51", left)
		}
	})
	for _, member := range []string{"not-a-number", "-1", "5@", "5@x", "5@11", "@10", "5@10@10", ""} {
		t.Run("bad "+member, func(t *testing.T) {
			ix, _, c := newTestIndex(t, Config{})
			c.ZAdd(ctx, key, redis.Z{Score: 10, Member: member})
			if _, err := ix.Due(ctx, key, 10, 10); !errors.Is(err, ErrBadMember) {
				t.Fatalf("Due over %q = %v, want ErrBadMember", member, err)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	ix, m, c := newTestIndex(t, Config{Shards: 1, Fill: 1 << 20})
	var entries []Entry
	for i := range MaxArgs + 10 {
		entries = append(entries, Entry{ID: uint64(i + 1), ExecAt: ms(t0.Add(time.Minute))})
	}
	if err := ix.Add(ctx, t0, entries); err != nil {
		t.Fatal(err)
	}
	key := ix.Key(entries[0])
	var scripts []int // argument count of every script run
	m.Server().SetPreHook(func(_ *server.Peer, cmd string, args ...string) bool {
		if cmd == "EVAL" || cmd == "EVALSHA" {
			scripts = append(scripts, len(args)-3) // script, numkeys, key
		}
		return false
	})
	if err := removeScript.Load(ctx, c).Err(); err != nil { // count EVALSHAs only
		t.Fatal(err)
	}
	// Remove all but the last 3, plus one id that is not there.
	rm := append(slices.Clone(entries[:len(entries)-3]), Entry{ID: 999_999})
	if err := ix.Remove(ctx, key, rm); err != nil {
		t.Fatal(err)
	}
	got := members(t, c, key)
	if len(got) != 3 {
		t.Fatalf("after Remove %s holds %v, want the last 3", key, got)
	}
	for _, e := range entries[len(entries)-3:] {
		if _, ok := got[strconv.FormatUint(e.ID, 10)]; !ok {
			t.Fatalf("Remove deleted %d, which it was not given", e.ID)
		}
	}
	// (MaxArgs+7) entries: three scripts, none with more than MaxArgs
	// arguments (their unpack() stays under Lua's limit).
	if len(scripts) != 3 {
		t.Fatalf("Remove ran %d scripts, want 3", len(scripts))
	}
	for _, n := range scripts {
		if n > MaxArgs {
			t.Fatalf("a script carried %d arguments, cap is %d", n, MaxArgs)
		}
	}
	if err := ix.Remove(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
}

func TestRetire(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{Shards: 4})
	a := Entry{ID: 1, ExecAt: ms(t0)}                      // segment 14:59
	b := Entry{ID: 2, ExecAt: ms(t0.Add(time.Minute))}     // segment 15:00
	d := Entry{ID: 3, ExecAt: ms(t0.Add(2 * time.Minute))} // segment 15:01
	if err := ix.Add(ctx, t0, []Entry{a, b, d}); err != nil {
		t.Fatal(err)
	}
	// Drain 14:59 and 15:01; 15:00 keeps its member.
	if err := ix.Remove(ctx, ix.Key(a), []Entry{a}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Remove(ctx, ix.Key(d), []Entry{d}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		before time.Time
		want   int
		left   []string
	}{
		{"nothing ended", t0.Add(59 * time.Second), 0, []string{"202501311459", "202501311500", "202501311501"}},
		{"drained and ended", t0.Add(time.Minute), 1, []string{"202501311500", "202501311501"}},
		{"not empty stays", t0.Add(2 * time.Minute), 0, []string{"202501311500", "202501311501"}},
		{"second drained", t0.Add(time.Hour), 1, []string{"202501311500"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ix.Retire(ctx, ms(tt.before))
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.want {
				t.Fatalf("Retire = %d, want %d", n, tt.want)
			}
			if left := c.ZRange(ctx, ix.Registry(), 0, -1).Val(); !slices.Equal(left, tt.left) {
				t.Fatalf("registry = %v, want %v", left, tt.left)
			}
		})
	}
}

func TestBacklog(t *testing.T) {
	ctx := context.Background()
	ix, _, _ := newTestIndex(t, Config{Shards: 4})
	var entries []Entry
	for i := range 10 {
		entries = append(entries, Entry{ID: uint64(i), ExecAt: ms(t0.Add(time.Minute)) + int64(i)})
	}
	for i := range 3 {
		entries = append(entries, Entry{ID: uint64(100 + i), ExecAt: ms(t0.Add(time.Hour))})
	}
	if err := ix.Add(ctx, t0, entries); err != nil {
		t.Fatal(err)
	}
	got, err := ix.Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []SegmentCount{
		{Segment: "202501311500", Start: ms(t0.Add(time.Minute)), End: ms(t0.Add(2 * time.Minute)), Pending: 10},
		{Segment: "202501311559", Start: ms(t0.Add(time.Hour)), End: ms(t0.Add(time.Hour + time.Minute)), Pending: 3},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Backlog = %+v, want %+v", got, want)
	}
}

func TestPending(t *testing.T) {
	ctx := context.Background()
	ix, _, _ := newTestIndex(t, Config{Shards: 4})
	now := time.Now()
	own := Entry{ID: 1, ExecAt: ms(now.Add(time.Hour))}
	late := Entry{ID: 2, ExecAt: ms(now.Add(-time.Hour))} // lands in the segment of now
	if err := ix.Add(ctx, now, []Entry{own, late}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		e    Entry
		want bool
	}{
		{"own segment", own, true},
		{"moved to the segment of now", late, true},
		{"other exec_at", Entry{ID: 1, ExecAt: own.ExecAt + 1}, false},
		{"unknown id", Entry{ID: 3, ExecAt: own.ExecAt}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ix.Pending(ctx, tt.e)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Pending(%+v) = %v, want %v", tt.e, got, tt.want)
			}
		})
	}
	if err := ix.Remove(ctx, ix.Key(own), []Entry{own}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := ix.Pending(ctx, own); ok {
		t.Fatal("Pending after Remove")
	}
}

func TestMetricsAndErrors(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	ix, err := New(c, Config{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	// A second index (or package payload) on the same registry shares the
	// collectors.
	if _, err := New(c, Config{Registerer: reg}); err != nil {
		t.Fatalf("second New on one registry: %v", err)
	}
	if err := ix.Add(ctx, t0, []Entry{{ID: 1, ExecAt: ms(t0)}}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := ix.DueKeys(ctx, ms(t0)); err == nil {
		t.Fatal("DueKeys against a closed Redis succeeded")
	}
	var errs dto.Metric
	if err := ix.metrics.errors.WithLabelValues("redis", "due_keys").Write(&errs); err != nil {
		t.Fatal(err)
	}
	if got := errs.GetCounter().GetValue(); got != 1 {
		t.Fatalf("store_errors_total{op=due_keys} = %v, want 1", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range mfs {
		series[mf.GetName()] = len(mf.GetMetric())
	}
	if series["delayq_store_call_seconds"] != 2 || series["delayq_store_errors_total"] != 1 {
		t.Fatalf("series = %v, want 2 call histograms (add, due_keys) and 1 error counter", series)
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
				if p := ix.plan(nowMs, entries); p.bad != nil {
					b.Fatal(p.bad)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/entry")
		})
	}
}

package zset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
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

// indexed returns the members of key with the exec_at each stands for
// (the score decoded: layout version 2 scores an offset).
func indexed(t *testing.T, ix *Index, c redis.UniversalClient, key string) map[string]float64 {
	t.Helper()
	start, err := ix.keyStart(key)
	if err != nil {
		t.Fatal(err)
	}
	out := members(t, c, key)
	for m, s := range out {
		out[m] = float64(ix.execAt(start, int64(s)))
	}
	return out
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
				if err := ix.Writer().Add(ctx, t0, es); err != nil {
					t.Fatal(err)
				}
			}
			if n := c.ZCard(ctx, key).Val(); n != 3 {
				t.Fatalf("%s holds %d members %v, want 3", key, n, members(t, c, key))
			}
			due := func(until int64) []Entry {
				t.Helper()
				es, err := ix.Reader().Due(ctx, key, until, 0)
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
				if ok, err := ix.Maintenance().Pending(ctx, e); err != nil || !ok {
					t.Fatalf("Pending(%v) = %v, %v", e, ok, err)
				}
			}

			// The scanner read the second task and removes it; the first stays.
			if err := ix.Reader().Remove(ctx, key, []Entry{second}); err != nil {
				t.Fatal(err)
			}
			if got, want := due(at(time.Minute)), []Entry{first, other}; !slices.Equal(got, want) {
				t.Fatalf("after removing %v: due = %v, want %v", second, got, want)
			}
			if ok, _ := ix.Maintenance().Pending(ctx, second); ok {
				t.Fatalf("Pending(%v) after its Remove", second)
			}
			// A stale Remove of the second again removes nothing.
			if err := ix.Reader().Remove(ctx, key, []Entry{second}); err != nil {
				t.Fatal(err)
			}
			if err := ix.Reader().Remove(ctx, key, []Entry{first, other}); err != nil {
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
		if err := ix.Writer().Add(ctx, t0, []Entry{second}); err != nil {
			t.Fatal(err)
		}
		read, err := ix.Reader().Due(ctx, key, second.ExecAt, 0)
		if err != nil || !slices.Equal(read, []Entry{second}) {
			t.Fatalf("Due = %v, %v", read, err)
		}
		if err := ix.Writer().Add(ctx, t0, []Entry{first}); err != nil {
			t.Fatal(err)
		}
		if err := ix.Reader().Remove(ctx, key, read); err != nil {
			t.Fatal(err)
		}
		if got, _ := ix.Reader().Due(ctx, key, second.ExecAt, 0); !slices.Equal(got, []Entry{first}) {
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
		if err := ix.Writer().Add(ctx, t0, entries); err != nil {
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
			if err := ix.Writer().Add(ctx, t0, es); err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				model[e] = true
			}
		case 1:
			es := []Entry{random()}
			if rng.IntN(2) == 0 { // what a scanner read, or a stale read
				if due, _ := ix.Reader().Due(ctx, key, base+int64(rng.IntN(4))*1000, 1+rng.IntN(3)); len(due) > 0 {
					es = due
				}
			}
			if err := ix.Reader().Remove(ctx, key, es); err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				delete(model, e)
			}
		case 2:
			until := base + int64(rng.IntN(4))*1000
			got, err := ix.Reader().Due(ctx, key, until, 0)
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
	if err := ix.Writer().Add(ctx, t0, []Entry{{ID: 1, ExecAt: ms(t0)}}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := ix.Reader().DueKeys(ctx, ms(t0)); err == nil {
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

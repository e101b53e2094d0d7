package zset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
				prefix = "delayq"
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

func members(t *testing.T, c *redis.Client, key string) map[string]float64 {
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

func TestAddBadEntry(t *testing.T) {
	ix, _, _ := newTestIndex(t, Config{})
	for _, e := range []Entry{{ID: 1, ExecAt: 0}, {ID: 1, ExecAt: -5}, {ID: 1, ExecAt: 1<<53 + 1}} {
		if err := ix.Add(context.Background(), t0, []Entry{e}); !errors.Is(err, ErrBadEntry) {
			t.Errorf("Add(%+v) = %v, want ErrBadEntry", e, err)
		}
	}
}

func TestAddLargeBatchChunks(t *testing.T) {
	ctx := context.Background()
	ix, m, c := newTestIndex(t, Config{Shards: 1})
	const n = MaxArgs*2 + 7 // needs several ZADDs on one key
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = Entry{ID: uint64(i + 1), ExecAt: ms(t0.Add(time.Hour)) + int64(i%1000)}
	}
	var zadds []int // argument count of every ZADD
	m.Server().SetPreHook(func(_ *server.Peer, cmd string, args ...string) bool {
		if cmd == "ZADD" {
			zadds = append(zadds, len(args)-1)
		}
		return false
	})
	if err := ix.Add(ctx, t0, entries); err != nil {
		t.Fatal(err)
	}
	if got := c.ZCard(ctx, ix.Key(entries[0])).Val(); got != n {
		t.Fatalf("zset holds %d, want %d", got, n)
	}
	// 1 registry ZADD + ceil(n / (MaxArgs/2)) member ZADDs, none too long.
	if len(zadds) != 1+5 {
		t.Fatalf("Add sent %d ZADDs, want 6", len(zadds))
	}
	for _, args := range zadds {
		if args > MaxArgs {
			t.Fatalf("a ZADD carried %d arguments, cap is %d", args, MaxArgs)
		}
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

func TestDueBadMember(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{})
	c.ZAdd(ctx, "delayq:202501311459:0", redis.Z{Score: 1, Member: "not-a-number"})
	if _, err := ix.Due(ctx, "delayq:202501311459:0", 10, 10); !errors.Is(err, ErrBadMember) {
		t.Fatalf("Due = %v, want ErrBadMember", err)
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{Shards: 1})
	var entries []Entry
	for i := range MaxArgs + 10 {
		entries = append(entries, Entry{ID: uint64(i + 1), ExecAt: ms(t0.Add(time.Minute))})
	}
	if err := ix.Add(ctx, t0, entries); err != nil {
		t.Fatal(err)
	}
	key := ix.Key(entries[0])
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
				if _, err := ix.plan(nowMs, entries); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/entry")
		})
	}
}

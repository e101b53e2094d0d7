package zset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

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
	if err := ix.Writer().Add(ctx, now, entries); err != nil {
		t.Fatal(err)
	}

	until := ms(t0) + 9_000 // ids 1000..1009 are due
	keys, err := ix.Reader().DueKeys(ctx, until)
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
		es, err := ix.Reader().Due(ctx, k, until, 0)
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
	keys, err = ix.Reader().DueKeys(ctx, ms(t0.Add(5*time.Minute))-1)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(keys, ix.Key(later)) {
		t.Fatalf("DueKeys lists %s before its segment starts", ix.Key(later))
	}
	keys, _ = ix.Reader().DueKeys(ctx, later.ExecAt)
	if !slices.Contains(keys, ix.Key(later)) {
		t.Fatalf("DueKeys(%d) = %v, misses %s", later.ExecAt, keys, ix.Key(later))
	}

	// LIMIT.
	one := Entry{ID: 1, ExecAt: ms(t0.Add(time.Hour))}
	key := ix.Key(one)
	for i := range 5 {
		c.ZAdd(ctx, key, redis.Z{Score: float64(ix.score(ix.segmentStart(one.ExecAt), one.ExecAt+int64(i))), Member: strconv.Itoa(i + 1)})
	}
	es, err := ix.Reader().Due(ctx, key, one.ExecAt+10, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{1, one.ExecAt}, {2, one.ExecAt + 1}, {3, one.ExecAt + 2}}
	if !slices.Equal(es, want) {
		t.Fatalf("Due limit 3 = %v, want %v", es, want)
	}
}

// The member forms, in both layout versions: "<id>" and "<id>@<score>"
// (both forms of one task read as one entry), and members that are
// neither are ErrBadMember.
func TestDueMemberForms(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		t.Run(fmt.Sprintf("absolute %v", v1), func(t *testing.T) { testDueMemberForms(t, v1) })
	}
}

func testDueMemberForms(t *testing.T, absolute bool) {
	ctx := context.Background()
	const key = "delayq:202501311459:0"
	start := ms(t0)
	index := func(t *testing.T) (*Index, redis.UniversalClient) {
		ix, _, c := newTestIndex(t, Config{})
		ix.absolute.Store(absolute)
		return ix, c
	}
	// z is the member id (with @score for the long form) at start+at.
	z := func(ix *Index, id string, long bool, at int64) redis.Z {
		s := ix.score(start, start+at)
		if long {
			id += "@" + strconv.FormatInt(s, 10)
		}
		return redis.Z{Score: float64(s), Member: id}
	}
	e := func(id uint64, at int64) Entry { return Entry{id, start + at} }
	t.Run("both forms", func(t *testing.T) {
		ix, c := index(t)
		c.ZAdd(ctx, key, z(ix, "5", false, 10), z(ix, "5", true, 20), z(ix, "6", false, 20), z(ix, "6", true, 30))
		got, err := ix.Reader().Due(ctx, key, start+100, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []Entry{e(5, 10), e(5, 20), e(6, 20), e(6, 30)}
		if !slices.Equal(got, want) {
			t.Fatalf("Due = %v, want %v", got, want)
		}
	})
	// Both forms of one task (see the package doc) read as one entry.
	t.Run("duplicate forms", func(t *testing.T) {
		ix, c := index(t)
		c.ZAdd(ctx, key, z(ix, "5", false, 20), z(ix, "5", true, 20), z(ix, "51", false, 20))
		got, err := ix.Reader().Due(ctx, key, start+100, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := []Entry{e(5, 20), e(51, 20)}; !slices.Equal(got, want) {
			t.Fatalf("Due = %v, want %v", got, want)
		}
		// A limit that the second form would fill: still two entries.
		if got, err := ix.Reader().Due(ctx, key, start+100, 2); err != nil || !slices.Equal(got, []Entry{e(5, 20), e(51, 20)}) {
			t.Fatalf("Due limit 2 = %v, %v; want both tasks", got, err)
		}
		if got, err := ix.Reader().Due(ctx, key, start+100, 1); err != nil || !slices.Equal(got, []Entry{e(5, 20)}) {
			t.Fatalf("Due limit 1 = %v, %v; want the first task", got, err)
		}
		if err := ix.Reader().Remove(ctx, key, got[:1]); err != nil {
			t.Fatal(err)
		}
		if left := indexed(t, ix, c, key); !maps.Equal(left, map[string]float64{"51": float64(start + 20)}) {
			t.Fatalf("Remove left %v, want only 51", left)
		}
	})
	for _, bad := range []struct {
		name string
		m    func(ix *Index) string
	}{
		{"not-a-number", func(*Index) string { return "not-a-number" }},
		{"-1", func(*Index) string { return "-1" }},
		{"5@", func(*Index) string { return "5@" }},
		{"5@x", func(*Index) string { return "5@x" }},
		{"another score", func(ix *Index) string { return z(ix, "5", true, 11).Member.(string) }},
		{"@score", func(ix *Index) string { return "@" + strconv.FormatInt(ix.score(start, start+10), 10) }},
		{"two @", func(ix *Index) string { return z(ix, "5", true, 10).Member.(string) + "@10" }},
		{"empty", func(*Index) string { return "" }},
	} {
		t.Run("bad "+bad.name, func(t *testing.T) {
			ix, c := index(t)
			c.ZAdd(ctx, key, redis.Z{Score: z(ix, "", false, 10).Score, Member: bad.m(ix)})
			if _, err := ix.Reader().Due(ctx, key, start+10, 10); !errors.Is(err, ErrBadMember) {
				t.Fatalf("Due over %q = %v, want ErrBadMember", bad.m(ix), err)
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
	if err := ix.Writer().Add(ctx, t0, entries); err != nil {
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
	if err := ix.Reader().Remove(ctx, key, rm); err != nil {
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
	if err := ix.Reader().Remove(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
}

// Earliest finds the lowest score in a range across segments and shards,
// nothing in an empty range, and moves on once the entry is removed.
func TestEarliest(t *testing.T) {
	ctx := context.Background()
	ix, _, _ := newTestIndex(t, Config{Shards: 8})
	var entries []Entry
	for i := range 30 { // 14:59:00 .. 15:01:54, every 6 s: three segments
		entries = append(entries, Entry{ID: uint64(500 + i), ExecAt: ms(t0) + int64(i)*6000})
	}
	if err := ix.Writer().Add(ctx, t0, entries); err != nil {
		t.Fatal(err)
	}
	r := ix.Reader()
	for _, c := range []struct {
		from, until int64
		want        int64
		found       bool
	}{
		{ms(t0), ms(t0) + 1e6, ms(t0), true},
		{ms(t0) + 1, ms(t0) + 1e6, ms(t0) + 6000, true},        // in the first segment
		{ms(t0) + 61_000, ms(t0) + 1e6, ms(t0) + 66_000, true}, // from the second one on
		{ms(t0) + 1, ms(t0) + 5999, 0, false},
		{ms(t0) + 200_000, ms(t0) + 1e6, 0, false},
	} {
		got, found, err := r.Earliest(ctx, c.from, c.until)
		if err != nil || got != c.want || found != c.found {
			t.Errorf("Earliest(%d, %d) = %d, %v, %v; want %d, %v", c.from, c.until, got, found, err, c.want, c.found)
		}
	}
	if err := r.Remove(ctx, ix.Key(entries[0]), entries[:1]); err != nil {
		t.Fatal(err)
	}
	if got, _, err := r.Earliest(ctx, ms(t0), ms(t0)+1e6); err != nil || got != ms(t0)+6000 {
		t.Fatalf("after removing the first: Earliest = %d, %v; want %d", got, err, ms(t0)+6000)
	}
}

// A scan task of another prefix (left in the topic by an earlier
// deployment) reads nothing and is no error: the scanner goes on.
func TestDueForeignKey(t *testing.T) {
	ctx := context.Background()
	ix, _, _ := newTestIndex(t, Config{Shards: 1})
	e := Entry{ID: 1, ExecAt: ms(t0)}
	if err := ix.Writer().Add(ctx, t0, []Entry{e}); err != nil {
		t.Fatal(err)
	}
	got, err := ix.Reader().DueMany(ctx, []Range{
		{Key: "other:202501311459:0", Until: ms(t0) + 1000},
		{Key: "garbage", Until: ms(t0) + 1000},
		{Key: ix.Key(e), Until: ms(t0) + 1000},
	}, 10)
	if err != nil || len(got) != 3 || len(got[0]) != 0 || len(got[1]) != 0 || !slices.Equal(got[2], []Entry{e}) {
		t.Fatalf("DueMany = %v, %v; want nothing from the foreign keys and %v", got, err, e)
	}
}

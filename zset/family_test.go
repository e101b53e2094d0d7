package zset

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestFamilies(t *testing.T)           { testFamilies(t, miniIndex) }
func TestFamiliesConcurrent(t *testing.T) { testFamiliesConcurrent(t, miniIndex) }
func TestSparseInFlight(t *testing.T)     { testSparseInFlight(t, miniIndex) }

func TestFamilyKeys(t *testing.T) {
	ix, _, _ := newTestIndex(t, Config{Shards: 4})
	tests := []struct {
		f, shard int
		want     string
	}{
		{0, 3, "delayq:202501311459:3"},
		{1, 7, "delayq:202501311459:1.7"},
		{5, 0, "delayq:202501311459:5.0"},
	}
	for _, tt := range tests {
		if got := ix.familyKey("202501311459", tt.f, tt.shard); got != tt.want {
			t.Errorf("familyKey(%d, %d) = %q, want %q", tt.f, tt.shard, got, tt.want)
		}
	}
	if got := len(ix.segmentKeys("202501311459", 3)); got != 4+8+12 {
		t.Errorf("3 families have %d keys, want 24", got)
	}
	for _, id := range []uint64{1, 42, 1 << 62} {
		if ix.familyShard(id, 0) != ix.shard(id) {
			t.Errorf("family 0 shard of %d is not its shard", id)
		}
	}
	if got := ix.segmentOf("delayq:202501311459:2.17"); got != "202501311459" {
		t.Errorf("segmentOf = %q", got)
	}
	if got := ix.segmentOf("other:202501311459:2"); got != "" {
		t.Errorf("segmentOf of another prefix = %q", got)
	}
}

// drain scans like the scanner: every due key, Due then Remove, until
// DueKeys lists nothing, and returns how often each entry came back.
func drain(t *testing.T, ix *Index, until int64, seen map[Entry]int) {
	t.Helper()
	ctx := context.Background()
	for {
		keys, err := ix.Reader().DueKeys(ctx, until)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			return
		}
		take(t, ix, keys, until, 50, seen)
	}
}

// take reads up to limit due entries of each of keys, counts them in seen
// and removes them.
func take(t *testing.T, ix *Index, keys []string, until int64, limit int, seen map[Entry]int) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		es, err := ix.Reader().Due(ctx, k, until, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			seen[e]++
		}
		if err := ix.Reader().Remove(ctx, k, es); err != nil {
			t.Fatal(err)
		}
	}
}

// testFamilies: a segment far denser than Shards*Fill spreads over shard
// families, no zset passes Fill (+ its seal), adding everything again adds
// nothing, and a scan that runs while the segment grows finds, removes and
// returns every task exactly once.
func testFamilies(t *testing.T, newIndex newIndexFunc) {
	ctx := context.Background()
	const fill = 4
	ix, c := newIndex(t, Config{Shards: 2, Fill: fill})
	seg := ms(t0.Add(time.Minute))
	var entries []Entry
	for i := range 300 {
		entries = append(entries, Entry{ID: uint64(i+1) << 20, ExecAt: seg + int64(i%7)})
	}
	// Reused ids: the same id due at another time of the segment.
	for i := range 20 {
		entries = append(entries, Entry{ID: uint64(i+1) << 20, ExecAt: seg + 100})
	}
	// The first four go in by ZADD NX (the segment is sparse: at most
	// 0.6*fill a zset on average), the rest walk their paths.
	if err := ix.Writer().Add(ctx, t0, entries[:4]); err != nil {
		t.Fatal(err)
	}
	if err := ix.Writer().Add(ctx, t0, entries[4:150]); err != nil {
		t.Fatal(err)
	}
	for c := range slices.Chunk(entries[150:], 7) {
		if err := ix.Writer().Add(ctx, t0, c); err != nil {
			t.Fatal(err)
		}
	}
	// Again, shuffled, in other batches: nothing new.
	again := slices.Clone(entries)
	rand.Shuffle(len(again), func(i, j int) { again[i], again[j] = again[j], again[i] })
	for c := range slices.Chunk(again, 13) {
		if err := ix.Writer().Add(ctx, t0, c); err != nil {
			t.Fatal(err)
		}
	}
	name := ix.segmentName(seg)
	fams, err := ix.families(ctx, []string{name})
	if err != nil {
		t.Fatal(err)
	}
	if fams[0] < 2 {
		t.Fatalf("%d entries in 2 shards of %d use %d families, want more", len(entries), fill, fams[0])
	}
	var total int64
	for _, k := range ix.segmentKeys(name, MaxFamilies) {
		n := c.ZCount(ctx, k, "-inf", strconv.FormatInt(maxExecAt, 10)).Val()
		if all := c.ZCard(ctx, k).Val(); all > fill+1 {
			t.Fatalf("%s holds %d members, more than fill %d and its seal", k, all, fill)
		}
		total += n
	}
	if total != int64(len(entries)) {
		t.Fatalf("the segment holds %d tasks, want %d", total, len(entries))
	}
	for _, e := range []Entry{entries[0], entries[299], entries[310]} {
		if ok, err := ix.Maintenance().Pending(ctx, e); err != nil || !ok {
			t.Fatalf("Pending(%v) = %v, %v; want true", e, ok, err)
		}
	}
	if b, err := ix.Maintenance().Backlog(ctx); err != nil || len(b) != 1 || b[0].Pending != int64(len(entries)) {
		t.Fatalf("Backlog = %+v, %v; want %d pending", b, err, len(entries))
	}

	// Scan while the segment keeps growing.
	until := seg + 1000
	seen := map[Entry]int{}
	var more []Entry
	for i := range 200 {
		more = append(more, Entry{ID: uint64(1000+i) << 20, ExecAt: seg + int64(i%5)})
	}
	for c := range slices.Chunk(more, 40) {
		keys, err := ix.Reader().DueKeys(ctx, until)
		if err != nil {
			t.Fatal(err)
		}
		take(t, ix, keys[:len(keys)/2], until, 3, seen)
		if err := ix.Writer().Add(ctx, t0, c); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, ix, until, seen)
	for _, e := range append(entries, more...) {
		if seen[e] != 1 {
			t.Fatalf("%v came back %d times, want once", e, seen[e])
		}
	}
	if len(seen) != len(entries)+len(more) {
		t.Fatalf("scan returned %d tasks, want %d", len(seen), len(entries)+len(more))
	}
	if b, err := ix.Maintenance().Backlog(ctx); err != nil || len(b) != 1 || b[0].Pending != 0 {
		t.Fatalf("Backlog after drain = %+v, %v; want 0 pending", b, err)
	}

	// Retire unlinks the sealed zsets and drops the counts.
	n, err := ix.Maintenance().Retire(ctx, seg+time.Hour.Milliseconds())
	if err != nil || n != 1 {
		t.Fatalf("Retire = %d, %v; want 1", n, err)
	}
	pl := c.Pipeline()
	var cmds []*redis.IntCmd
	for _, k := range ix.segmentKeys(name, MaxFamilies) {
		cmds = append(cmds, pl.Exists(ctx, k))
	}
	if _, err := pl.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if cmd.Val() != 0 {
			t.Fatalf("key %d of the retired segment is left", i)
		}
	}
	for _, h := range []string{ix.familiesKey(), ix.pendingKey(), ix.offeredKey()} {
		if n := c.HLen(ctx, h).Val(); n != 0 {
			t.Fatalf("%s keeps %d fields after retire", h, n)
		}
	}
}

// testFamiliesConcurrent: adders grow one segment through its families
// while a scanner drains it; every task comes back exactly once.
func testFamiliesConcurrent(t *testing.T, newIndex newIndexFunc) {
	ctx := context.Background()
	ix, _ := newIndex(t, Config{Shards: 3, Fill: 5})
	seg := ms(t0.Add(time.Minute))
	until := seg + 1000
	const adders, each = 4, 150
	var wg sync.WaitGroup
	done := make(chan struct{})
	for a := range adders {
		wg.Go(func() {
			for lo := 0; lo < each; lo += 10 {
				var batch []Entry
				for i := lo; i < lo+10; i++ {
					batch = append(batch, Entry{ID: uint64(a*each+i+1) << 16, ExecAt: seg + int64(i%3)})
				}
				if err := ix.Writer().Add(ctx, t0, batch); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	seen := map[Entry]int{}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		drain(t, ix, until, seen)
	}
	if len(seen) != adders*each {
		t.Fatalf("scan returned %d tasks, want %d", len(seen), adders*each)
	}
	for e, n := range seen {
		if n != 1 {
			t.Fatalf("%v came back %d times", e, n)
		}
	}
}

// testSparseInFlight: Adds whose first round trips all come before any of
// them writes (lanes of several processes at once) may together take no
// more tasks of a segment by plain ZADD NX than the sparse bound; a count
// of what was added would let each of them through. And every Add counts,
// whatever it adds: a batch added again, or one under a second family,
// still raises the offered count.
func testSparseInFlight(t *testing.T, newIndex newIndexFunc) {
	ctx := context.Background()
	ix, c := newIndex(t, Config{Shards: 4, Fill: 20}) // bound: 0.6*4*20 = 48
	seg := ms(t0.Add(time.Minute))
	batch := func(first int) []Entry {
		var es []Entry
		for i := range 30 {
			es = append(es, Entry{ID: uint64(first+i+1) << 20, ExecAt: seg + int64(i)})
		}
		return es
	}
	a, b := ix.Writer().plan(ms(t0), batch(0)), ix.Writer().plan(ms(t0), batch(100))
	sa, err := ix.Writer().sparse(ctx, a.segs, a.segments)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := ix.Writer().sparse(ctx, b.segs, b.segments)
	if err != nil {
		t.Fatal(err)
	}
	if !sa[0] || sb[0] {
		t.Fatalf("two batches of 30 in flight against a bound of 48: sparse = %v, %v; want the first only", sa[0], sb[0])
	}
	// What they write, and the same again, counts in full.
	for range 2 {
		for _, p := range []plan{a, b} {
			if err := ix.Writer().Add(ctx, t0, p.segs[0].entries); err != nil {
				t.Fatal(err)
			}
		}
	}
	name := ix.segmentName(seg)
	if got := c.HGet(ctx, ix.offeredKey(), name).Val(); got != "180" {
		t.Fatalf("offered count = %s, want 180 (2 in flight + 4 Adds of 30)", got)
	}
	if b, err := ix.Maintenance().Backlog(ctx); err != nil || len(b) != 1 || b[0].Pending != 60 {
		t.Fatalf("Backlog = %+v, %v; want 60 pending", b, err)
	}
}

// A segment written without pending counts (an index from before them) is
// counted zset by zset.
func TestBacklogWithoutCounts(t *testing.T) {
	ctx := context.Background()
	ix, _, c := newTestIndex(t, Config{Shards: 4})
	var entries []Entry
	for i := range 10 {
		entries = append(entries, Entry{ID: uint64(i + 1), ExecAt: ms(t0.Add(time.Minute)) + int64(i)})
	}
	if err := ix.Writer().Add(ctx, t0, entries); err != nil {
		t.Fatal(err)
	}
	c.Del(ctx, ix.pendingKey())
	got, err := ix.Maintenance().Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Pending != 10 {
		t.Fatalf("Backlog = %+v, want 10 pending", got)
	}
}

func TestDueGroups(t *testing.T) { testDueGroups(t, miniIndex) }

// testDueGroups: a segment spread over families lists its due zsets in
// groups by family-0 shard; each group holds exactly the tasks of its
// family-0 shard, DueMany reads a group in one call and RemoveMany empties
// it, with the pending counts following.
func testDueGroups(t *testing.T, newIndex newIndexFunc) {
	ctx := context.Background()
	const shards = 3
	ix, _ := newIndex(t, Config{Shards: shards, Fill: 4})
	seg := ms(t0.Add(time.Minute))
	var entries []Entry
	for i := range 200 {
		entries = append(entries, Entry{ID: uint64(i+1) << 20, ExecAt: seg + int64(i%11)})
	}
	if err := ix.Writer().Add(ctx, t0, entries); err != nil {
		t.Fatal(err)
	}
	groups, err := ix.Reader().DueGroups(ctx, seg+59_999)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ix.Reader().DueKeys(ctx, seg+59_999)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != shards || len(keys) <= 2*shards {
		t.Fatalf("%d groups of %d due zsets, want %d groups over more than two families", len(groups), len(keys), shards)
	}
	var flat []string
	seen := make(map[Entry]int)
	for g, grp := range groups {
		if want := ix.key(ix.segmentName(seg), g); grp.Head != want {
			t.Errorf("group %d head %q, want %q", g, grp.Head, want)
		}
		flat = append(flat, grp.Due...)
		rs := make([]Range, len(grp.Due))
		for i, k := range grp.Due {
			rs[i] = Range{Key: k, Until: seg + 59_999}
		}
		got, err := ix.Reader().DueMany(ctx, rs, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var rm []Removal
		for i, es := range got {
			if len(es) == 0 {
				t.Errorf("%s listed due but read empty", grp.Due[i])
			}
			for _, e := range es {
				seen[e]++
				if ix.shard(e.ID) != g {
					t.Errorf("%v (family-0 shard %d) read in group %d", e, ix.shard(e.ID), g)
				}
			}
			rm = append(rm, Removal{Key: grp.Due[i], Entries: es})
		}
		if err := ix.Reader().RemoveMany(ctx, rm); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(flat)
	slices.Sort(keys)
	if !slices.Equal(flat, keys) {
		t.Errorf("groups list %v, DueKeys %v", flat, keys)
	}
	for _, e := range entries {
		if seen[e] != 1 {
			t.Errorf("%v read %d times, want once", e, seen[e])
		}
	}
	if left, err := ix.Reader().DueKeys(ctx, seg+59_999); err != nil || len(left) != 0 {
		t.Errorf("due after RemoveMany: %v, %v", left, err)
	}
	backlog, err := ix.Maintenance().Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backlog {
		if b.Pending != 0 {
			t.Errorf("backlog %+v after every task was removed, want 0", b)
		}
	}
}

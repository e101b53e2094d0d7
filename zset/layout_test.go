package zset

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestLayout(t *testing.T)          { testLayout(t, miniIndex) }
func TestRealRedisLayout(t *testing.T) { testLayout(t, realIndex) }

// The first CheckLayout on a prefix records its layout; a later one with
// the same layout passes, one with another layout fails naming each
// differing flag with both values and changes nothing; a prefix whose
// layout key is gone (a Redis that lost its keys) is recorded anew.
func testLayout(t *testing.T, newIndex newIndexFunc) {
	ctx := context.Background()
	first, c := newIndex(t, Config{})
	prefix := first.prefix
	index := func(cfg Config) *Index {
		t.Helper()
		cfg.Prefix = prefix
		ix, err := New(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	stored := func() string {
		t.Helper()
		v, err := c.Get(ctx, prefix+":layout").Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	defaults := "version=2 segment=1m0s shards=256 zset-fill=127"
	if got := first.Layout(); got != defaults {
		t.Fatalf("Layout() = %q, want %q", got, defaults)
	}
	if err := first.CheckLayout(ctx); err != nil {
		t.Fatalf("first CheckLayout: %v", err)
	}
	if got := stored(); got != defaults {
		t.Fatalf("recorded %q, want %q", got, defaults)
	}
	if err := index(Config{Segment: time.Minute, Shards: 256, Fill: 127}).CheckLayout(ctx); err != nil {
		t.Fatalf("same layout, given explicitly: %v", err)
	}

	tests := []struct {
		name   string
		cfg    Config
		record string // set before the check; "" keeps the defaults
		want   []string
	}{
		{name: "segment", cfg: Config{Segment: 30 * time.Second},
			want: []string{"Redis prefix " + prefix + " was laid out with --segment 1m0s, configured 30s: give the recorded values (" + defaults + ") or use another --prefix"}},
		{name: "shards and fill", cfg: Config{Shards: 64, Fill: 100},
			want: []string{"--shards 256, configured 64; --zset-fill 127, configured 100"}},
		{name: "layout version", record: "version=3 segment=1m0s shards=256 zset-fill=127",
			want: []string{"holds keys of layout version 3, this delayd reads version 2"}},
		{name: "version 1 of another layout", record: "version=1 segment=1m0s shards=256 zset-fill=127", cfg: Config{Shards: 64},
			want: []string{"--shards 256, configured 64"}},
		{name: "not a layout", record: "hello",
			want: []string{prefix + `:layout holds "hello", not a layout delayq wrote`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			record := defaults
			if tc.record != "" {
				record = tc.record
			}
			if err := c.Set(ctx, prefix+":layout", record, 0).Err(); err != nil {
				t.Fatal(err)
			}
			err := index(tc.cfg).CheckLayout(ctx)
			if !errors.Is(err, ErrLayoutMismatch) {
				t.Fatalf("CheckLayout = %v, want ErrLayoutMismatch", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if got := stored(); got != record {
				t.Errorf("a refused check changed the record to %q", got)
			}
		})
	}

	if err := c.Del(ctx, prefix+":layout").Err(); err != nil {
		t.Fatal(err)
	}
	other := index(Config{Segment: 30 * time.Second})
	if err := other.CheckLayout(ctx); err != nil {
		t.Fatalf("CheckLayout after the layout key was lost: %v", err)
	}
	if got := stored(); got != other.Layout() {
		t.Fatalf("recorded anew %q, want %q", got, other.Layout())
	}
}

// A prefix recorded as layout version 1 with the same flags is adopted by
// CheckLayout and FollowLayout: the index goes on scoring by exec_at
// there, and reads what a version-1 delayd wrote; a new prefix gets
// version 2, whose scores are small offsets.
func TestLayoutAdoptsVersion1(t *testing.T) {
	ctx := context.Background()
	for _, follow := range []bool{false, true} {
		ix, _, c := newTestIndex(t, Config{Shards: 1})
		e := Entry{ID: 7, ExecAt: ms(t0.Add(time.Minute))}
		v1 := "version=1 segment=1m0s shards=1 zset-fill=127"
		if err := c.Set(ctx, ix.prefix+":layout", v1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		// What a version-1 delayd wrote: the score is the exec_at.
		if err := c.ZAdd(ctx, ix.Key(e), redis.Z{Score: float64(e.ExecAt), Member: "7"}).Err(); err != nil {
			t.Fatal(err)
		}
		check := ix.CheckLayout
		if follow {
			check = ix.FollowLayout
		}
		if err := check(ctx); err != nil || ix.Layout() != v1 {
			t.Fatalf("follow %v: %v, Layout() = %q; want %q adopted", follow, err, ix.Layout(), v1)
		}
		due, err := ix.Reader().Due(ctx, ix.Key(e), e.ExecAt, 10)
		if err != nil || len(due) != 1 || due[0] != e {
			t.Fatalf("follow %v: Due = %v, %v; want %v", follow, due, err, e)
		}
		later := Entry{ID: 8, ExecAt: e.ExecAt + 5}
		if err := ix.Writer().Add(ctx, t0, []Entry{later}); err != nil {
			t.Fatal(err)
		}
		if got := members(t, c, ix.Key(later)); got["8"] != float64(later.ExecAt) {
			t.Fatalf("follow %v: added %v, want score %d (version 1)", follow, got, later.ExecAt)
		}
	}
	fresh, _, c := newTestIndex(t, Config{Shards: 1})
	if err := fresh.FollowLayout(ctx); err != nil {
		t.Fatal(err)
	}
	e := Entry{ID: 9, ExecAt: ms(t0.Add(time.Minute)) + 59_999} // the last ms of its segment
	if err := fresh.Writer().Add(ctx, t0, []Entry{e}); err != nil {
		t.Fatal(err)
	}
	if got := members(t, c, fresh.Key(e)); got["9"] != 30_000 {
		t.Fatalf("version 2 scored %v, want 30000 (offset from the middle, plus one)", got)
	}
}

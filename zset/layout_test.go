package zset

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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
	defaults := "version=1 segment=1m0s shards=256 zset-fill=127"
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
		{name: "layout version", record: "version=2 segment=1m0s shards=256 zset-fill=127",
			want: []string{"holds keys of layout version 2, this delayd reads version 1"}},
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

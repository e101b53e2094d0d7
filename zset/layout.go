package zset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// LayoutVersion is the version of the key layout this package writes (the
// package doc, "Keys"). It changes when keys, members or scores change
// meaning, so that a delayd of another layout version refuses a prefix it
// would misread. Version 2 scores a member by its offset in its segment
// (keys.go, score); version 1 by its exec_at. A prefix recorded as
// version 1 is still read and written as version 1 (CheckLayout and
// FollowLayout adopt it): an upgrade needs no migration.
const LayoutVersion = 2

// absoluteVersion is the layout version whose scores are exec_at itself.
const absoluteVersion = 1

// ErrLayoutMismatch is wrapped by the CheckLayout error for a prefix laid
// out otherwise than the Index: retrying does not help.
var ErrLayoutMismatch = errors.New("zset: layout mismatch")

// layoutKey is the string key {prefix}:layout, which records the layout
// of the prefix (see Layout). One small key of its own, in whatever slot
// of a Redis Cluster.
func (ix *Index) layoutKey() string { return ix.prefix + ":layout" }

// layoutFields are the fields of a recorded layout, in order, named after
// delayd's flags (and the layout version).
var layoutFields = []string{"version", "segment", "shards", "zset-fill"}

// Layout is the layout of ix as CheckLayout records it, e.g.
// "version=2 segment=1m0s shards=256 zset-fill=127": what two processes
// must agree on to read each other's keys.
func (ix *Index) Layout() string {
	v := LayoutVersion
	if ix.absolute.Load() {
		v = absoluteVersion
	}
	return ix.layoutOf(v)
}

func (ix *Index) layoutOf(version int) string {
	seg := time.Duration(ix.segMs) * time.Millisecond
	return fmt.Sprintf("version=%d segment=%s shards=%d zset-fill=%d", version, seg, ix.shards, ix.fill)
}

// CheckLayout records Layout under the prefix if no layout is recorded
// there (the first start on this prefix, or a Redis that lost its keys),
// else compares the recorded one with it. A prefix recorded as layout
// version 1 with the same flags is adopted: ix reads and writes it as
// version 1 from then on. Any other difference is an error
// wrapping ErrLayoutMismatch that names each differing flag with the
// recorded and the configured value. Other errors are Redis's, worth a
// retry.
func (ix *Index) CheckLayout(ctx context.Context) error {
	key, want := ix.layoutKey(), ix.Layout()
	for {
		recorded, err := ix.client.SetNX(ctx, key, want, 0).Result()
		if err != nil {
			return fmt.Errorf("zset: record layout in %s: %w", key, err)
		}
		if recorded {
			return nil
		}
		have, err := ix.client.Get(ctx, key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue // deleted since SETNX: record it again
		case err != nil:
			return fmt.Errorf("zset: read layout %s: %w", key, err)
		}
		if ix.adopt(have) {
			return nil
		}
		return ix.compareLayout(have, want)
	}
}

// FollowLayout reads the layout recorded under the prefix, if any, and
// adopts version 1 like CheckLayout, without recording or comparing
// anything: for tools that read a prefix some delayd laid out (delayctl).
func (ix *Index) FollowLayout(ctx context.Context) error {
	have, err := ix.client.Get(ctx, ix.layoutKey()).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return nil
	case err != nil:
		return fmt.Errorf("zset: read layout %s: %w", ix.layoutKey(), err)
	}
	ix.adopt(have)
	return nil
}

// adopt makes ix read and write layout version 1 when the recorded layout
// is ix's in that version, and reports whether it did.
func (ix *Index) adopt(recorded string) bool {
	if recorded != ix.layoutOf(absoluteVersion) {
		return false
	}
	ix.absolute.Store(true)
	return true
}

func (ix *Index) compareLayout(have, want string) error {
	if have == want {
		return nil
	}
	hf, ok := parseLayout(have)
	if !ok {
		return fmt.Errorf("%w: %s holds %q, not a layout delayq wrote: use another --prefix", ErrLayoutMismatch, ix.layoutKey(), have)
	}
	if hf["version"] == strconv.Itoa(absoluteVersion) {
		want = ix.layoutOf(absoluteVersion) // this delayd reads it: name the flags
	}
	wf, _ := parseLayout(want)
	if hf["version"] != wf["version"] {
		return fmt.Errorf("%w: Redis prefix %s holds keys of layout version %s, this delayd reads version %s: use a delayd that reads version %s or another --prefix",
			ErrLayoutMismatch, ix.prefix, hf["version"], wf["version"], hf["version"])
	}
	var diffs []string
	for _, f := range layoutFields[1:] {
		if hf[f] != wf[f] {
			diffs = append(diffs, fmt.Sprintf("--%s %s, configured %s", f, hf[f], wf[f]))
		}
	}
	return fmt.Errorf("%w: Redis prefix %s was laid out with %s: give the recorded values (%s) or use another --prefix",
		ErrLayoutMismatch, ix.prefix, strings.Join(diffs, "; "), have)
}

// parseLayout returns the fields of a recorded layout; ok is false unless
// it has exactly layoutFields, each once, with a value of the right kind.
func parseLayout(s string) (map[string]string, bool) {
	parts := strings.Fields(s)
	if len(parts) != len(layoutFields) {
		return nil, false
	}
	m := make(map[string]string, len(parts))
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k != layoutFields[i] {
			return nil, false
		}
		var err error
		if k == "segment" {
			_, err = time.ParseDuration(v)
		} else {
			_, err = strconv.Atoi(v)
		}
		if err != nil {
			return nil, false
		}
		m[k] = v
	}
	return m, true
}

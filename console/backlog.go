package console

import (
	"context"
	"sync"
	"time"

	"github.com/delayq/delayq/zset"
)

// Backlog chart shape: the next hour by minute, the next 30 days by day.
const (
	backlogMinutes = 60
	backlogDays    = 30
)

// Bucket is the pending count of one due-time bucket.
type Bucket struct {
	Start   int64 `json:"start"` // unix ms
	Pending int64 `json:"pending"`
}

// BacklogView is the pending backlog by due time. A segment counts in the
// bucket its start falls in: with segments longer than a minute the minute
// chart shows each segment's tasks at its start.
type BacklogView struct {
	Now       int64    `json:"now"`        // unix ms the view was computed at
	Total     int64    `json:"total"`      // every pending task
	Overdue   int64    `json:"overdue"`    // in segments that started before this minute
	Minutes   []Bucket `json:"minutes"`    // 60 buckets from this minute on
	Days      []Bucket `json:"days"`       // 30 UTC days from today on
	Later     int64    `json:"later"`      // due after the last day bucket
	Segments  int      `json:"segments"`   // registered segments
	CachedFor float64  `json:"cached_for"` // seconds this view is reused
}

// bucketize builds the view of segs at now. Overdue tasks are also in the
// first minute and the first day: they are due now.
func bucketize(now time.Time, segs []zset.SegmentCount) BacklogView {
	now = now.UTC()
	minute := now.Truncate(time.Minute)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	v := BacklogView{Now: now.UnixMilli(), Minutes: make([]Bucket, backlogMinutes), Days: make([]Bucket, backlogDays), Segments: len(segs)}
	for i := range v.Minutes {
		v.Minutes[i].Start = minute.Add(time.Duration(i) * time.Minute).UnixMilli()
	}
	for i := range v.Days {
		v.Days[i].Start = day.AddDate(0, 0, i).UnixMilli()
	}
	for _, s := range segs {
		if s.Pending == 0 {
			continue
		}
		v.Total += s.Pending
		start := time.UnixMilli(s.Start).UTC()
		if start.Before(minute) {
			v.Overdue += s.Pending
			v.Minutes[0].Pending += s.Pending
			v.Days[0].Pending += s.Pending
			continue
		}
		if i := int(start.Sub(minute) / time.Minute); i < backlogMinutes {
			v.Minutes[i].Pending += s.Pending
		}
		d := int(start.Sub(day) / (24 * time.Hour))
		if d < backlogDays {
			v.Days[d].Pending += s.Pending
		} else {
			v.Later += s.Pending
		}
	}
	return v
}

// backlogCache reuses one Index.Backlog read for ttl.
type backlogCache struct {
	ttl time.Duration
	mu  sync.Mutex
	at  time.Time
	ix  Index
	ok  bool
	seg []zset.SegmentCount
}

func (b *backlogCache) set(ix Index) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ix, b.ok = ix, false
}

func (b *backlogCache) get(ctx context.Context, now time.Time) ([]zset.SegmentCount, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ok && now.Sub(b.at) < b.ttl {
		return b.seg, nil
	}
	segs, err := b.ix.Backlog(ctx)
	if err != nil {
		return nil, err
	}
	b.seg, b.at, b.ok = segs, now, true
	return segs, nil
}

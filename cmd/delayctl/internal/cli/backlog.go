package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// bucket is the pending count of one due-time bucket.
type bucket struct {
	Start   string `json:"start"`
	StartMs int64  `json:"start_ms"`
	Pending int64  `json:"pending"`
}

// backlogReport is what backlog prints, also as JSON.
type backlogReport struct {
	Prefix   string   `json:"prefix"`
	Now      string   `json:"now"`
	Total    int64    `json:"total"`
	Overdue  int64    `json:"overdue"` // in segments that have ended
	Segments []bucket `json:"segments"`
	Hours    []bucket `json:"hours"`
	Days     []bucket `json:"days"`
}

var byLayouts = map[string]string{
	"hour": "2006-01-02 15:00",
	"day":  "2006-01-02",
}

func newBacklog(sys *IO, g *globals) *cobra.Command {
	var (
		by     string
		asJSON bool
		width  int
	)
	cmd := &cobra.Command{
		Use:   "backlog",
		Short: "Show pending tasks by due time",
		Long: `backlog counts the tasks pending in Redis by due time, per segment, per hour
or per day (--by), as a table with a text histogram, or as JSON with all three
(--json). Buckets without pending tasks are left out. It costs one ZCARD per
shard of every registered segment.`,
		Example: `  delayctl backlog
  delayctl backlog --by day
  delayctl backlog --json | jq .total`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, ok := byLayouts[by]; !ok && by != "segment" {
				return usagef("--by: %q is not segment, hour or day", by)
			}
			if width < 0 {
				return usagef("--width: %d is negative", width)
			}
			ctx := cmd.Context()
			ix, rdb, err := g.openIndex(ctx)
			if err != nil {
				return err
			}
			defer rdb.Close()
			segs, err := ix.Backlog(ctx)
			if err != nil {
				return fmt.Errorf("redis at %s: %w", g.redis, err)
			}
			r := buildBacklog(g.prefix, g.segment, sys.Now(), segs)
			if asJSON {
				enc := json.NewEncoder(sys.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			r.print(sys.Stdout, by, g.segment, width)
			return nil
		},
	}
	cmd.Flags().StringVar(&by, "by", "hour", "bucket of the table: segment, hour or day")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON with every grouping")
	cmd.Flags().IntVar(&width, "width", 40, "width of the histogram bars")
	_ = cmd.RegisterFlagCompletionFunc("by", cobra.FixedCompletions(
		[]string{"segment", "hour", "day"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func buildBacklog(prefix string, segment time.Duration, now time.Time, segs []zset.SegmentCount) backlogReport {
	r := backlogReport{Prefix: prefix, Now: payload.FormatTime(now.UnixMilli()), Segments: []bucket{}}
	segLayout := segmentLayout(segment)
	nowMs := now.UnixMilli()
	for _, s := range segs {
		if s.Pending == 0 {
			continue
		}
		r.Total += s.Pending
		if s.End <= nowMs {
			r.Overdue += s.Pending
		}
		r.Segments = append(r.Segments, bucket{Start: formatBucket(s.Start, segLayout), StartMs: s.Start, Pending: s.Pending})
	}
	r.Hours = regroup(r.Segments, time.Hour, byLayouts["hour"])
	r.Days = regroup(r.Segments, 24*time.Hour, byLayouts["day"])
	return r
}

func segmentLayout(segment time.Duration) string {
	if segment%time.Minute != 0 {
		return "2006-01-02 15:04:05"
	}
	return "2006-01-02 15:04"
}

func formatBucket(ms int64, layout string) string {
	return time.UnixMilli(ms).UTC().Format(layout)
}

// regroup sums ordered buckets into buckets of size d (UTC).
func regroup(in []bucket, d time.Duration, layout string) []bucket {
	out := []bucket{}
	step := d.Milliseconds()
	for _, b := range in {
		start := b.StartMs - ((b.StartMs%step)+step)%step
		if n := len(out); n > 0 && out[n-1].StartMs == start {
			out[n-1].Pending += b.Pending
			continue
		}
		out = append(out, bucket{Start: formatBucket(start, layout), StartMs: start, Pending: b.Pending})
	}
	return out
}

func (r backlogReport) print(w io.Writer, by string, segment time.Duration, width int) {
	if r.Total == 0 {
		fmt.Fprintf(w, "no pending tasks under prefix %s\n", r.Prefix)
		return
	}
	fmt.Fprintf(w, "pending tasks under prefix %s: %d (overdue: %d), now %s\n\n", r.Prefix, r.Total, r.Overdue, r.Now)
	rows, title := r.Hours, "due (UTC hour)"
	switch by {
	case "segment":
		rows, title = r.Segments, fmt.Sprintf("due (UTC, %v segment)", segment)
	case "day":
		rows, title = r.Days, "due (UTC day)"
	}
	var most int64
	labelWidth := len(title)
	for _, b := range rows {
		most = max(most, b.Pending)
		labelWidth = max(labelWidth, len(b.Start))
	}
	countWidth := max(len("pending"), len(fmt.Sprint(most)))
	fmt.Fprintf(w, "%-*s  %*s\n", labelWidth, title, countWidth, "pending")
	for _, b := range rows {
		fmt.Fprintf(w, "%-*s  %*d  %s\n", labelWidth, b.Start, countWidth, b.Pending, bar(b.Pending, most, width))
	}
	fmt.Fprintf(w, "%-*s  %*d\n", labelWidth, "total", countWidth, r.Total)
}

// bar is a histogram bar of n out of most in width cells, at least one
// cell for any n > 0.
func bar(n, most int64, width int) string {
	if most <= 0 || width <= 0 {
		return ""
	}
	cells := int(n * int64(width) / most)
	if cells == 0 && n > 0 {
		cells = 1
	}
	return strings.Repeat("█", cells)
}

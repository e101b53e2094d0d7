package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/delayq/delayq/failed"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

func newReplay(sys *IO, g *globals) *cobra.Command {
	var (
		reason, topic    string
		dryRun           bool
		limit, batch     int
		progressMode     string
		progressInterval time.Duration
	)
	from, to := &timeValue{now: sys.Now}, &timeValue{now: sys.Now}
	cmd := &cobra.Command{
		Use:   "replay --from TIME --to TIME [--reason TEXT] [--topic T] [--dry-run] [--limit N]",
		Short: "Send failed messages back to the input topic once their cause is fixed",
		Long: `replay reads the delay-failed topic's messages stamped from --from (inclusive)
to --to (exclusive) and writes each one back to delay-input, as the producer
wrote it: same key, value, timestamp and headers, without delay-error and the
delay-source-* headers. A message ingest had read from delay-input-slow goes
back to delay-input-slow. --reason keeps messages whose delay-error contains
the text (ignoring case), --topic those for one business topic (delay-topic),
--limit stops after N messages; --dry-run lists them and writes nothing.

The timestamp of a failed message is its input's (ingest refused it) or the
time the business topic refused the task (the scanner). Every partition is
read from the first message stamped at --from up to the first one stamped a
minute past --to, or up to its end when replay started.

Replayed messages stay traceable: delay-replay-of names the failed message
(delay-failed/<partition>/<offset>), delay-replay-source the input position
it was read from; ingest drops both (only delayq writes them, and input
cannot tell delayq from a producer), so they stay in delay-input. A message without
delay-id gets the task name ingest had derived for it, so a replay is the
same task as what was stored of the original, and replaying a range twice
is one task while it is pending. A task already delivered is delivered
again by a second replay, with the same delay-id and delay-at. A refused
task's due time has passed: it is delivered at once. Messages whose
contents were dropped to fit delay-failed are counted as skipped.`,
		Example: `  delayctl replay --from -2h --to now --reason "connection refused" --dry-run
  delayctl replay --from 2030-01-02T00:00:00Z --to 2030-01-03T00:00:00Z --topic orders --limit 1000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := require(cmd, "from", "to"); err != nil {
				return err
			}
			if to.ms() <= from.ms() {
				return usagef("--to %s is not after --from %s", payload.FormatTime(to.ms()), payload.FormatTime(from.ms()))
			}
			if topic != "" && !topics.Legal(topic) {
				return usagef("--topic: %q is not a legal Kafka topic name", topic)
			}
			if limit < 0 {
				return usagef("--limit: %d must be 0 (no limit) or more", limit)
			}
			if batch < 1 {
				return usagef("--batch: %d must be at least 1", batch)
			}
			switch progressMode {
			case progressAuto, progressBar, progressLines, progressNone:
			default:
				return usagef("--progress: %q is not auto, bar, lines or none", progressMode)
			}

			ctx := cmd.Context()
			if err := g.checkKafka(ctx); err != nil {
				return err
			}
			var w failed.Writer
			if !dryRun {
				kw := producer.New(producer.Config{Brokers: g.brokers, Auth: g.auth, BatchSize: batch})
				defer kw.Close()
				w = kw
			}
			f := failed.Filter{From: from.t, To: to.t, Reason: reason, Topic: topic, Limit: limit}
			opt := failed.Options{DryRun: dryRun}
			if dryRun {
				opt.Each = func(r failed.Record, m payload.Message) { listReplay(sys.Stdout, r, m) }
			}
			p := newReplayProgress(sys.Stderr, progressMode, progressInterval)
			opt.Progress = p.update
			start := time.Now()
			stats, err := failed.Replay(ctx, failed.Config{Brokers: g.brokers, Auth: g.auth, BatchSize: batch}, f, w, opt)
			p.finish()
			printReplaySummary(sys.Stdout, f, dryRun, stats, time.Since(start))
			switch {
			case err == nil:
				return nil
			case errors.Is(err, context.Canceled) && ctx.Err() != nil:
				fmt.Fprintf(sys.Stdout, "interrupted after %d replayed; a rerun of the range replays them again "+
					"(the same tasks while they are pending)\n", stats.Replayed)
				return fmt.Errorf("interrupted after %d replayed: %w", stats.Replayed, context.Canceled)
			case errors.Is(err, kafka.UnknownTopicOrPartition):
				return fmt.Errorf("topic %s not found (create it with delayctl init): %w", topics.Failed, err)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.Var(from, "from", "first record time, inclusive (required): "+timeHelp)
	fs.Var(to, "to", "end of the record times, exclusive (required): "+timeHelp)
	fs.StringVar(&reason, "reason", "", "only messages whose delay-error contains this text, ignoring case")
	fs.StringVar(&topic, "topic", "", "only messages for this business topic (delay-topic)")
	fs.BoolVar(&dryRun, "dry-run", false, "list what would be replayed; write nothing")
	fs.IntVar(&limit, "limit", 0, "stop after this many matching messages (0: no limit)")
	fs.IntVar(&batch, "batch", failed.DefaultBatchSize, "messages written together")
	fs.StringVar(&progressMode, "progress", progressAuto, "progress on stderr: auto (bar on a terminal, lines otherwise), bar, lines, none")
	fs.DurationVar(&progressInterval, "progress-interval", 5*time.Second, "time between progress lines (--progress lines)")
	_ = cmd.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions(
		[]string{progressAuto, progressBar, progressLines, progressNone}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// listReplay prints one dry-run line: the failed message, its time, its
// business topic and task name, where it would go, and why it failed.
func listReplay(w io.Writer, r failed.Record, m payload.Message) {
	dest := "-> " + m.Topic
	id := r.ID
	for _, h := range m.Headers {
		if h.Key == payload.HeaderID {
			id = string(h.Value)
		}
	}
	if m.Topic == "" {
		dest = "skipped (contents dropped)"
	}
	fmt.Fprintf(w, "%s  %s  topic=%s  id=%s  %s  reason: %s\n",
		r.Position(), payload.FormatTime(r.Time.UnixMilli()), orDash(r.Business), orDash(id), dest, oneLine(r.Reason))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printReplaySummary(w io.Writer, f failed.Filter, dry bool, s failed.Stats, took time.Duration) {
	var scope []string
	if f.Reason != "" {
		scope = append(scope, fmt.Sprintf("reason containing %q", f.Reason))
	}
	if f.Topic != "" {
		scope = append(scope, "topic "+f.Topic)
	}
	if f.Limit > 0 {
		scope = append(scope, fmt.Sprintf("at most %d", f.Limit))
	}
	if len(scope) == 0 {
		scope = append(scope, "all reasons and topics")
	}
	mode := ""
	if dry {
		mode = " (dry run: nothing written)"
	}
	fmt.Fprintf(w, "replay of %s, records stamped %s to %s, %s%s\n", topics.Failed,
		payload.FormatTime(f.From.UnixMilli()), payload.FormatTime(f.To.UnixMilli()), strings.Join(scope, ", "), mode)
	line := func(label string, n int64) { fmt.Fprintf(w, "  %-28s %d\n", label, n) }
	line("partitions", int64(s.Partitions))
	line("scanned", s.Scanned)
	line("matched", s.Matched)
	if dry {
		line("would replay", s.Replayed)
	} else {
		line("replayed", s.Replayed)
	}
	line("skipped (contents dropped)", s.Skipped)
	rate := 0.0
	if took > 0 {
		rate = float64(s.Scanned) / took.Seconds()
	}
	fmt.Fprintf(w, "  took %v, %.0f records/s\n", took.Round(time.Millisecond), rate)
}

// replayProgress renders failed.Stats on stderr like backfill's progress:
// a bar redrawn at most every 100 ms, or a line every interval. Completion
// is the share of the records to read, known from the offsets at the
// start.
type replayProgress struct {
	w     io.Writer
	mode  string
	every time.Duration
	start time.Time
	last  time.Time
	drawn bool
}

func newReplayProgress(w io.Writer, mode string, every time.Duration) *replayProgress {
	if mode == progressAuto {
		mode = progressLines
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = progressBar
		}
	}
	if mode == progressBar {
		every = 100 * time.Millisecond
	}
	now := time.Now()
	return &replayProgress{w: w, mode: mode, every: every, start: now, last: now}
}

func (p *replayProgress) update(s failed.Stats) {
	now := time.Now()
	if p.mode == progressNone || now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	frac, rate, eta := 0.0, 0.0, "?"
	if s.Total > 0 {
		frac = min(float64(s.Scanned)/float64(s.Total), 1)
	}
	elapsed := now.Sub(p.start)
	if elapsed > 0 {
		rate = float64(s.Scanned) / elapsed.Seconds()
	}
	if frac > 0 {
		eta = (time.Duration(float64(elapsed) * (1 - frac) / frac)).Round(time.Second).String()
	}
	switch p.mode {
	case progressBar:
		const width = 30
		filled := int(frac * width)
		fmt.Fprintf(p.w, "\r\033[K[%s%s] %5.1f%%  %d records  %d matched  %d replayed  %.0f records/s  ETA %s",
			strings.Repeat("=", filled), strings.Repeat(" ", width-filled), 100*frac,
			s.Scanned, s.Matched, s.Replayed, rate, eta)
		p.drawn = true
	case progressLines:
		fmt.Fprintf(p.w, "replay: %.1f%% scanned %d of %d matched %d replayed %d skipped %d, %.0f records/s, eta %s\n",
			100*frac, s.Scanned, s.Total, s.Matched, s.Replayed, s.Skipped, rate, eta)
	}
}

func (p *replayProgress) finish() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

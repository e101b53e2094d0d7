package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayctl/internal/backfill"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
)

func newBackfill(sys *IO, g *globals) *cobra.Command {
	var (
		topic               string
		dryRun, skipPending bool
		rf                  rangeFlags
	)
	cmd := &cobra.Command{
		Use:   "backfill --from TIME --to TIME [--topic T] [--dry-run] [--skip-pending]",
		Short: "Deliver stored tasks due in a time range again",
		Long: `backfill scans the HBase table for tasks due from --from (inclusive) to --to
(exclusive), across all salts in due-time order, and writes each task's message
to its business topic again, with its delay-id and delay-at headers. Cancelled
tasks are skipped; --topic limits it to one business topic; --skip-pending
skips tasks still pending in Redis (the scanner will deliver them); --dry-run
counts without writing.

Delivery is at least once, in batches (--batch). It is safe to interrupt
(Ctrl-C): the batch in hand is written, the summary says where to resume, and a
rerun repeats at most the tasks due at that millisecond. Rows live for the
retention window after their due time (7 days by default), so that is how far
back a backfill reaches.`,
		Example: `  delayctl backfill --from -2h --to now --skip-pending
  delayctl backfill --from 2030-01-02T00:00:00Z --to 2030-01-03T00:00:00Z --topic orders --dry-run`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.check(cmd); err != nil {
				return err
			}
			from, to := rf.from.ms(), rf.to.ms()
			if oldest := sys.Now().Add(-hbase.DefaultRetention).UnixMilli(); from < oldest {
				fmt.Fprintf(sys.Stderr, "note: rows due before %s have expired if the table keeps the default retention (7 days)\n",
					payload.FormatTime(oldest))
			}

			ctx := cmd.Context()
			var ix backfill.Index
			if skipPending {
				zix, rdb, err := g.openIndex(ctx)
				if err != nil {
					return err
				}
				defer rdb.Close()
				ix = zix
			}
			var w backfill.Writer
			if !dryRun {
				if err := g.checkKafka(ctx); err != nil {
					return err
				}
				kw := producer.New(producer.Config{Brokers: g.brokers, Auth: g.auth, BatchSize: rf.batch})
				defer kw.Close()
				w = kw
			}
			store, err := g.openStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()

			p := rf.progress(sys)
			start := time.Now()
			stats, err := backfill.Run(ctx, backfill.Config{
				From: from, To: to, Topic: topic, DryRun: dryRun, SkipPending: skipPending,
				BatchSize: rf.batch, Progress: p.update,
			}, store, ix, w)
			p.finish()
			printSummary(sys.Stdout, g.table, topic, from, to, dryRun, stats, time.Since(start))
			return rf.result(ctx, sys, err, stats.Resume)
		},
	}
	rf.register(sys, cmd, backfill.DefaultBatchSize, "tasks checked and written together")
	fs := cmd.Flags()
	fs.StringVar(&topic, "topic", "", "only tasks for this business topic")
	fs.BoolVar(&dryRun, "dry-run", false, "count what would be delivered; write nothing")
	fs.BoolVar(&skipPending, "skip-pending", false, "skip tasks still pending in Redis")
	return cmd
}

func printSummary(w io.Writer, table, topic string, from, to int64, dry bool, s backfill.Stats, took time.Duration) {
	scope := "all topics"
	if topic != "" {
		scope = "topic " + topic
	}
	mode := ""
	if dry {
		mode = " (dry run: nothing written)"
	}
	fmt.Fprintf(w, "backfill of table %s, due %s to %s, %s%s\n", table, payload.FormatTime(from), payload.FormatTime(to), scope, mode)
	line := func(label string, n int64) { fmt.Fprintf(w, "  %-22s %d\n", label, n) }
	line("scanned", s.Scanned)
	if dry {
		line("would deliver", s.Delivered)
	} else {
		line("delivered", s.Delivered)
	}
	line("skipped as pending", s.Pending)
	line("skipped as cancelled", s.Cancelled)
	if topic != "" {
		line("skipped, other topic", s.OtherTopic)
	}
	if s.Invalid > 0 {
		line("skipped, no topic", s.Invalid)
	}
	printRate(w, s.Scanned, took)
}

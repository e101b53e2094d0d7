package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/repair"
)

func newRepair(sys *IO, g *globals) *cobra.Command {
	var (
		dryRun, opFlags bool
		rf              rangeFlags
	)
	cmd := &cobra.Command{
		Use:   "repair --from TIME --to TIME [--dry-run] [--op-flags]",
		Short: "Index again the pending tasks Redis lost, from HBase",
		Long: `repair scans the HBase table for tasks due from --from (inclusive) to --to
(exclusive), across all salts in due-time order, and adds to the Redis index
every pending task it lacks: not cancelled, and at its id's current due time
(a rescheduled task at its new time only, a recurring series at its next
occurrence only). A task already indexed stays one entry, so a repair can run
twice, or beside delayd. --dry-run counts the missing tasks and writes nothing.

delayd repairs by itself when it finds the index's generation marker gone (a
new, flushed or wiped Redis) or, through Sentinel, a failover; this command is
for a range an operator knows was lost. A missing task already due in the
range is delivered at once: one that was delivered before is delivered again.
--op-flags also sets again the op flags of every id with a cancel by id or a
reschedule (after Redis lost everything; it reads every id row).`,
		Example: `  delayctl repair --from -5m --to +720h --dry-run
  delayctl repair --from 2030-01-02T00:00:00Z --to 2030-01-03T00:00:00Z`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.check(cmd); err != nil {
				return err
			}
			from, to := rf.from.ms(), rf.to.ms()
			ctx := cmd.Context()
			zix, rdb, err := g.openZset(ctx)
			if err != nil {
				return err
			}
			ix := zix.Repairer()
			defer rdb.Close()
			store, err := g.openStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()

			p := rf.progress(sys)
			start := time.Now()
			stats, err := repair.Run(ctx, repair.Config{
				From: from, To: to, DryRun: dryRun, BatchSize: rf.batch,
				Progress: func(s repair.Stats) {
					p.draw("repair", s.Scanned, s.Position, "missing", s.Reindexed,
						fmt.Sprintf("missing %d present %d cancelled %d moved %d", s.Reindexed, s.Present, s.Cancelled, s.Moved))
				},
			}, store, ix)
			var flags int64
			if err == nil && opFlags && !dryRun {
				flags, err = repair.RebuildFlags(ctx, store, ix, payload.DefaultMaxDelay+hbase.DefaultRetention)
			}
			p.finish()
			printRepair(sys.Stdout, g.table, g.prefix, from, to, dryRun, stats, flags, time.Since(start))
			return rf.result(ctx, sys, err, stats.Resume)
		},
	}
	rf.register(sys, cmd, repair.DefaultBatchSize, "tasks checked and indexed together")
	fs := cmd.Flags()
	fs.BoolVar(&dryRun, "dry-run", false, "count the pending tasks missing from Redis; write nothing")
	fs.BoolVar(&opFlags, "op-flags", false, "also set the op flags of every id with a cancel by id or a reschedule again (reads every id row)")
	return cmd
}

func printRepair(w io.Writer, table, prefix string, from, to int64, dry bool, s repair.Stats, flags int64, took time.Duration) {
	mode := ""
	if dry {
		mode = " (dry run: nothing written)"
	}
	fmt.Fprintf(w, "repair of index %s from table %s, due %s to %s%s\n", prefix, table, payload.FormatTime(from), payload.FormatTime(to), mode)
	line := func(label string, n int64) { fmt.Fprintf(w, "  %-26s %d\n", label, n) }
	line("scanned", s.Scanned)
	if dry {
		line("missing from the index", s.Reindexed)
	} else {
		line("indexed again", s.Reindexed)
	}
	line("  of which already due", s.Overdue)
	line("already indexed", s.Present)
	line("skipped as cancelled", s.Cancelled)
	line("skipped, moved elsewhere", s.Moved)
	if flags > 0 {
		line("op flags set again", flags)
	}
	printRate(w, s.Scanned, took)
}

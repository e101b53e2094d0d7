package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newCancel(sys *IO, g *globals) *cobra.Command {
	var (
		id string
		cf clientFlags
	)
	at := &timeValue{now: sys.Now, due: "--at"}
	cmd := &cobra.Command{
		Use:   "cancel --id ID [--at TIME]",
		Short: "Cancel a task by its id, and optionally its due time",
		Long: `cancel writes a cancel for the task with this id to delay-input.

With --at, it cancels the task due at that time: delayd stores a marker on
the task's row. Without --at, it cancels by id alone: delayd marks the id's
row (and the task's row at its current due time, also after a reschedule),
and a task with this id that arrives later is cancelled too, for delayd's
--max-delay + --retention (the cancel is kept, even for an id not stored
yet). Either way the cancel wins whether it arrives before or after the
task; cancelling a task already delivered is harmless. Check the result
with inspect.`,
		Example: `  delayctl cancel --id reminder-42
  delayctl cancel --id reminder-42 --at 2030-01-02T15:04:05Z
  delayctl cancel --id 1871234567890123456 --at 1893596645000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := require(cmd, "id"); err != nil {
				return err
			}
			if len(id) > 128 {
				return usagef("--id: %d bytes, over the 128-byte limit", len(id))
			}
			c, err := cf.client(sys, g)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx := cmd.Context()
			if err := g.checkKafka(ctx); err != nil {
				return err
			}
			if !cmd.Flags().Changed("at") {
				if err := c.CancelByID(ctx, id); err != nil {
					return err
				}
				fmt.Fprintf(sys.Stdout, "cancel sent for id %s (any due time) to %s\n", id, cf.input)
				return nil
			}
			if err := c.Cancel(ctx, id, at.t); err != nil {
				return err
			}
			fmt.Fprintf(sys.Stdout, "cancel sent for id %s due %s to %s\n", id, formatTime(at.ms()), cf.input)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "task id (required)")
	cmd.Flags().Var(at, "at", "the task's due time (optional; without it, cancel by id alone): "+timeHelp)
	cf.register(cmd, false)
	return cmd
}

func newReschedule(sys *IO, g *globals) *cobra.Command {
	var (
		id string
		cf clientFlags
	)
	at := &timeValue{now: sys.Now, due: "--at"}
	after := &durationValue{name: "--after"}
	cmd := &cobra.Command{
		Use:   "reschedule --id ID (--at TIME | --after DURATION)",
		Short: "Move a pending task to a new due time",
		Long: `reschedule writes a reschedule for the task with this id to delay-input.
delayd moves the task to the new due time, keeping its key, value and
headers: the old time is not delivered, the new one is. delayd sends the
reschedule to delay-failed, with the reason in delay-error, when the id is
cancelled, already due, or unknown (no task of that id submitted within
30 s after the reschedule: reported when those 30 s end); it never moves a
task submitted later than that.
Check the result with inspect.`,
		Example: `  delayctl reschedule --id reminder-42 --after 2h
  delayctl reschedule --id reminder-42 --at 2030-01-02T15:04:05Z`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := require(cmd, "id"); err != nil {
				return err
			}
			if len(id) > 128 {
				return usagef("--id: %d bytes, over the 128-byte limit", len(id))
			}
			atSet, err := atOrAfter(cmd)
			if err != nil {
				return err
			}
			if err := cf.checkDue(atSet, at.t, after.d, sys.Now()); err != nil {
				return err
			}
			when := at.t
			if !atSet {
				when = sys.Now().Add(after.d)
			}
			c, err := cf.client(sys, g)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx := cmd.Context()
			if err := g.checkKafka(ctx); err != nil {
				return err
			}
			if err := c.Reschedule(ctx, id, when); err != nil {
				return err
			}
			fmt.Fprintf(sys.Stdout, "reschedule sent for id %s to %s to %s\n", id, formatTime(when.UnixMilli()), cf.input)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "task id (required)")
	cmd.Flags().Var(at, "at", "the new due time: "+timeHelp)
	cmd.Flags().Var(after, "after", "the new due time as a delay from now: "+delayHelp)
	cf.register(cmd, false)
	return cmd
}

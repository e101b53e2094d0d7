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
	at := &timeValue{now: sys.Now}
	cmd := &cobra.Command{
		Use:   "cancel --id ID --at TIME",
		Short: "Cancel a task by its id and due time",
		Long: `cancel writes a cancel for the task with this id and due time to delay-input.
delayd stores it as a marker on the task's row, so the cancel wins whether it
arrives before or after the task; cancelling a task that is unknown or already
delivered is harmless. Check the result with inspect.`,
		Example: `  delayctl cancel --id reminder-42 --at 2030-01-02T15:04:05Z
  delayctl cancel --id 1871234567890123456 --at 1893596645000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := require(cmd, "id", "at"); err != nil {
				return err
			}
			if len(id) > 128 {
				return usagef("--id: %d bytes, over the 128-byte limit", len(id))
			}
			c, err := cf.client(g)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx := cmd.Context()
			if err := g.checkKafka(ctx); err != nil {
				return err
			}
			if err := c.Cancel(ctx, id, at.t); err != nil {
				return err
			}
			fmt.Fprintf(sys.Stdout, "cancel sent for id %s due %s to %s\n", id, formatTime(at.ms()), cf.input)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "task id (required)")
	cmd.Flags().Var(at, "at", "the task's due time (required): "+timeHelp)
	cf.register(cmd, false)
	return cmd
}

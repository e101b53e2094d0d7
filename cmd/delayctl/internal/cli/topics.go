package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topicctl"
)

// topicCommands are pause, resume, rate, expire-after and topics: the
// operators' controls of business topics, kept in Redis (package
// topicctl), which every delayd obeys within a fraction of a second.
func topicCommands(sys *IO, g *globals) []*cobra.Command {
	return []*cobra.Command{
		pauseCommand(sys, g, "pause", "Hold back the due tasks of a topic (or --all)",
			`pause holds back the due tasks of TOPIC (of every topic with --all): they stay
pending, neither delivered nor failed, until resume delivers them in due order.
Cancels and reschedules still work on them.`,
			func(ctx context.Context, c *topicctl.Store, t string) error { return c.Pause(ctx, t) }),
		pauseCommand(sys, g, "resume", "Deliver a paused topic's tasks again (or --all)",
			`resume delivers TOPIC's held tasks, in due order (at its rate, if it has one),
and its tasks from then on. resume --all ends a pause of every topic and every
topic's own pause.`,
			func(ctx context.Context, c *topicctl.Store, t string) error { return c.Resume(ctx, t) }),
		{
			Use:     "rate TOPIC PER_SECOND",
			Short:   "Limit a topic's deliveries per second, across all delayd (0: unlimited)",
			Example: "  delayctl rate orders 500\n  delayctl rate orders 0",
			Args:    argCount(2, 2),
			RunE: func(cmd *cobra.Command, args []string) error {
				n, err := strconv.Atoi(args[1])
				if err != nil || n < 0 {
					return usagef("PER_SECOND %q: want a whole number >= 0", args[1])
				}
				return withTopics(cmd.Context(), sys, g, func(ctx context.Context, c *topicctl.Store) error {
					return c.SetRate(ctx, args[0], n)
				})
			},
		},
		{
			Use:     "expire-after TOPIC DURATION",
			Short:   "Set a topic's default expiry: tasks later than that go to delay-failed (0s: none)",
			Example: "  delayctl expire-after orders 10m",
			Args:    argCount(2, 2),
			RunE: func(cmd *cobra.Command, args []string) error {
				d, err := payload.ParseDelay("DURATION", args[1])
				if err != nil {
					return usagef("%v; 0s: none", err)
				}
				return withTopics(cmd.Context(), sys, g, func(ctx context.Context, c *topicctl.Store) error {
					return c.SetExpireAfter(ctx, args[0], d)
				})
			},
		},
		topicsCommand(sys, g),
	}
}

func pauseCommand(sys *IO, g *globals, use, short, long string, do func(context.Context, *topicctl.Store, string) error) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     use + " TOPIC | --all",
		Short:   short,
		Long:    long,
		Example: fmt.Sprintf("  delayctl %s orders\n  delayctl %s --all", use, use),
		Args:    argCount(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := topicctl.All
			switch {
			case all && len(args) > 0:
				return usagef("give TOPIC or --all, not both")
			case !all && len(args) == 0:
				return usagef("give TOPIC or --all")
			case !all:
				topic = args[0]
			}
			return withTopics(cmd.Context(), sys, g, func(ctx context.Context, c *topicctl.Store) error {
				return do(ctx, c, topic)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every topic")
	return cmd
}

func topicsCommand(sys *IO, g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Show the topics' controls and held tasks",
		Long: `topics lists every topic with a control (pause, rate, expiry) or tasks held
back: its state, its rate, its default expiry and how many due tasks it holds.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withTopicsQuiet(cmd.Context(), g, func(ctx context.Context, c *topicctl.Store) error {
				st, all, err := c.List(ctx)
				if err != nil {
					return err
				}
				return printTopics(sys, st, all, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// topicRow is a line of delayctl topics, also its JSON.
type topicRow struct {
	Topic       string `json:"topic"`
	State       string `json:"state"`
	PerSecond   int    `json:"per_second"`
	ExpireAfter string `json:"expire_after,omitempty"` // a Go duration; absent: no default expiry
	Held        int64  `json:"held"`
}

func printTopics(sys *IO, st []topicctl.Status, all, asJSON bool) error {
	rows := make([]topicRow, len(st))
	for i, t := range st {
		r := topicRow{Topic: t.Topic, State: t.State(all), PerSecond: t.Control.Rate, Held: t.Held}
		if t.Control.ExpireAfter > 0 {
			r.ExpireAfter = t.Control.ExpireAfter.String()
		}
		rows[i] = r
	}
	if asJSON {
		enc := json.NewEncoder(sys.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			AllPaused bool       `json:"all_paused"`
			Topics    []topicRow `json:"topics"`
		}{all, rows})
	}
	if all {
		fmt.Fprintln(sys.Stdout, "ALL TOPICS PAUSED (delayctl resume --all)")
	}
	tw := tabwriter.NewWriter(sys.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tSTATE\tRATE/S\tEXPIRE-AFTER\tHELD")
	for _, r := range rows {
		rate, expire := "-", cmp.Or(r.ExpireAfter, "-")
		if r.PerSecond > 0 {
			rate = strconv.Itoa(r.PerSecond)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", r.Topic, r.State, rate, expire, r.Held)
	}
	return tw.Flush()
}

// withTopics runs do on the topic controls, then prints the topics.
func withTopics(ctx context.Context, sys *IO, g *globals, do func(context.Context, *topicctl.Store) error) error {
	return withTopicsQuiet(ctx, g, func(ctx context.Context, c *topicctl.Store) error {
		if err := do(ctx, c); err != nil {
			if errors.Is(err, topicctl.ErrTopic) {
				return usageError{err}
			}
			return err
		}
		st, all, err := c.List(ctx)
		if err != nil {
			return err
		}
		return printTopics(sys, st, all, false)
	})
}

func withTopicsQuiet(ctx context.Context, g *globals, do func(context.Context, *topicctl.Store) error) error {
	rdb, err := g.openRedis(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	c, err := topicctl.New(rdb, topicctl.Config{Prefix: g.prefix})
	if err != nil {
		return err
	}
	err = do(ctx, c)
	var ue usageError
	if err != nil && !errors.As(err, &ue) {
		return fmt.Errorf("redis at %s: %w", g.redis, err)
	}
	return err
}

// argCount wants lo to hi positional arguments (a usage error otherwise).
func argCount(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usagef("%s: %d arguments, want %s", cmd.Name(), len(args), cmd.Use)
		}
		return nil
	}
}

package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/payload/hbase"
)

// setupTimeout bounds creating the topics and the table; HBase may still
// be starting (CreateTable retries meanwhile).
const setupTimeout = 60 * time.Second

func newInit(io *IO, g *globals) *cobra.Command {
	var partitions, replication int
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create delayq's Kafka topics and the pre-split HBase table (idempotent)",
		Long: `init creates what delayd needs and leaves what exists alone: the topics
delay-input, delay-input-slow, delay-scan and delay-failed, and the HBase table
(--table) pre-split into one region per salt (--salts). Running it again is
harmless; existing topics keep their partition count.`,
		Example: `  delayctl init
  delayctl init --partitions 32 --brokers kafka-1:9092,kafka-2:9092 --hbase-zk zk-1:2181`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if partitions < 0 {
				return usagef("--partitions: %d is negative", partitions)
			}
			if replication < 0 {
				return usagef("--replication-factor: %d is negative", replication)
			}
			ctx := cmd.Context()
			if err := g.checkKafka(ctx); err != nil {
				return err
			}
			if err := g.checkZK(ctx); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, setupTimeout)
			defer cancel()
			specs := admin.Defaults(partitions)
			names := make([]string, len(specs))
			for i := range specs {
				specs[i].ReplicationFactor = replication
				names[i] = specs[i].Name
			}
			if err := admin.Ensure(ctx, g.brokers, g.auth, specs); err != nil {
				return fmt.Errorf("kafka at %s: %w", strings.Join(g.brokers, ","), err)
			}
			fmt.Fprintf(io.Stdout, "kafka topics ready: %s\n", strings.Join(names, ", "))
			if err := hbase.CreateTable(ctx, g.zk, g.zkRoot, g.table, g.salts); err != nil {
				return g.hbaseError(err)
			}
			fmt.Fprintf(io.Stdout, "hbase table ready: %s (%d salts, one region each)\n", g.table, g.salts)
			return nil
		},
	}
	cmd.Flags().IntVar(&partitions, "partitions", 8, "partitions of topics that do not exist yet (0: the broker's default)")
	cmd.Flags().IntVar(&replication, "replication-factor", 0, "replication factor of new topics (0: the broker's default)")
	return cmd
}

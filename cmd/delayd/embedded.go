package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/delayq/delayq/daemon"
)

// runEmbedded runs the whole pipeline in one process with no outside
// services and prints how to reach it.
func runEmbedded(ctx context.Context, cfg daemon.Config, logger *slog.Logger) error {
	logger.Info("embedded mode: in-process Kafka and Redis, payloads in memory; nothing is kept across restarts")
	return daemon.Embedded(ctx, cfg, daemon.Options{Logger: logger}, func(brokers, redis string) {
		fmt.Fprintf(os.Stdout, `delayd --embedded: Kafka on %[1]s, Redis on %[2]s, metrics on http://%[3]s/metrics
Nothing is kept across restarts.

Submit a task due in 5 seconds:
  echo hello | kcat -P -b %[1]s -t delay-input -k order-1 -H delay-topic=orders -H delay-after=5s
Five seconds later, consume it from its business topic:
  kcat -C -b %[1]s -t orders -o beginning -f 'key=%%k value=%%s headers=%%h\n'
`, brokers, redis, cfg.HTTP)
	})
}

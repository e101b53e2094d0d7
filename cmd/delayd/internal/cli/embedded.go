package cli

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/delayq/delayq/daemon"
)

// runEmbedded runs the whole pipeline in one process with no outside
// services and prints how to reach it to out.
func runEmbedded(ctx context.Context, cfg daemon.Config, opts daemon.Options, out io.Writer) error {
	return daemon.Embedded(ctx, cfg, opts, func(brokers, redis string) {
		// Called once the configuration is valid and every port bound:
		// nothing is printed before a refusal.
		opts.Logger.Info("embedded mode: in-process Kafka and Redis, payloads in memory; nothing is kept across restarts")
		banner(out, cfg, brokers, redis)
	})
}

// banner says where everything listens and gives a first task to submit,
// with kcat and, with the api role, with curl: commands that work as
// printed.
func banner(out io.Writer, cfg daemon.Config, brokers, redis string) {
	fmt.Fprintf(out, `delayd --embedded: Kafka on %[1]s, Redis on %[2]s, metrics on http://%[3]s/metrics
Nothing is kept across restarts.
`, brokers, redis, cfg.HTTP)
	if cfg.Console {
		fmt.Fprintf(out, "Console: http://%s/ui/\n", cfg.HTTP)
	}
	fmt.Fprintf(out, `
Submit a task due in 5 seconds:
  echo hello | kcat -P -b %[1]s -t delay-input -k order-1 -H delay-topic=orders -H delay-after=5s
Five seconds later, consume it from its business topic:
  kcat -C -b %[1]s -t orders -o beginning -f 'key=%%k value=%%s headers=%%h\n'
`, brokers)
	if !slices.Contains(cfg.Roles, daemon.RoleAPI) {
		return
	}
	auth := ""
	if cfg.APIToken != "" {
		auth = ` -H "Authorization: Bearer $DELAYQ_API_TOKEN"` // the variable, never the token
	}
	fmt.Fprintf(out, `
HTTP API on http://%[1]s (OpenAPI: http://%[1]s/v1/openapi.yaml). Submit a task due in 5 seconds:
  curl -s%[2]s -H 'Content-Type: application/json' -d '{"topic":"orders","after":"5s","key":"order-2","value":"hello"}' http://%[1]s/v1/tasks
`, cfg.API, auth)
}

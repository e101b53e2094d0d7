// Command delayctl operates delayq: it creates the topics and the HBase
// table (init), submits, cancels and inspects tasks, shows the pending
// backlog and delivers stored tasks again (backfill). Shell completion:
// delayctl completion bash|zsh|fish|powershell.
//
// Every flag also reads DELAYQ_<FLAG> (upper case, dashes as underscores);
// a flag beats the environment. See ../../docs/delayctl.md and `delayctl --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/delayq/delayq/cmd/delayctl/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal the command winds down (a backfill writes
		// the batch in hand); a second signal kills the process.
		<-ctx.Done()
		stop()
	}()
	code := cli.Main(ctx, os.Args[1:], cli.IO{})
	stop()
	os.Exit(code)
}

// Command delayd runs delayq's roles: ingest, dispatcher and scanner, and
// on demand the HTTP API (--roles ...,api); with --embedded, all of it in
// one process with an in-process Kafka and Redis.
//
// Every flag also reads DELAYQ_<FLAG> (upper case, dashes as underscores);
// a flag beats the environment. `delayd --help` lists them by group; see
// ../../README.md. The flags, the help and the run are package
// internal/cli's.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/delayq/delayq/cmd/delayd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.IO{Terminal: term.IsTerminal(int(os.Stderr.Fd()))})
	stop()
	os.Exit(code)
}

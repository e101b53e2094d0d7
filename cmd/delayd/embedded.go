package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/delayq/delayq/daemon"
)

// runEmbedded runs the whole pipeline in one process with no outside
// services. Not built yet: it says so instead of pretending.
func runEmbedded(_ context.Context, _ daemon.Config, _ *slog.Logger) error {
	return errors.New("--embedded: not available in this build yet; start the local stack with `make up` and run delayd without --embedded")
}

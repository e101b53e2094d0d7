package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/delayq/delayq/internal/tracing"
	"io"
	"os"
	"strings"
	"time"

	"github.com/delayq/delayq/cmd/internal/envflag"
	"github.com/delayq/delayq/cmd/internal/logging"
	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/internal/version"
)

// Exit codes of Main.
const (
	ExitOK      = 0 // done, or stopped by a signal
	ExitFailure = 1
	ExitUsage   = 2 // an unknown flag, a bad value or configuration
)

// IO is what Main reads and writes besides its arguments; zero fields
// mean the process's own.
type IO struct {
	Stdout, Stderr io.Writer
	// Getenv reads the DELAYQ_* variables (os.Getenv).
	Getenv func(string) string
	// Terminal says stderr is a terminal: logs default to text then.
	Terminal bool
}

func (s *IO) setDefaults() {
	if s.Stdout == nil {
		s.Stdout = os.Stdout
	}
	if s.Stderr == nil {
		s.Stderr = os.Stderr
	}
	if s.Getenv == nil {
		s.Getenv = os.Getenv
	}
}

// usageError is a refused flag, variable or configuration: exit code 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// Main runs delayd with args until ctx ends and returns its exit code. A
// refused flag or variable is one line on stderr that names it and its
// value, with a hint; --help prints the grouped flags to stdout.
func Main(ctx context.Context, args []string, io IO) int {
	io.setDefaults()
	err := run(ctx, args, io)
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(io.Stderr, "delayd: %v; run delayd --help\n", err)
		return ExitUsage
	case errors.Is(err, daemon.ErrConfig):
		fmt.Fprintln(io.Stderr, "delayd:", strings.ReplaceAll(err.Error(), daemon.ErrConfig.Error()+": ", ""))
		return ExitUsage
	}
	fmt.Fprintln(io.Stderr, "delayd:", err)
	return ExitFailure
}

func run(ctx context.Context, args []string, io IO) error {
	cfg := daemon.DefaultConfig()
	fs, cmd := NewFlagSet(&cfg)
	cfg.ConsoleToken = io.Getenv("DELAYQ_CONSOLE_TOKEN") // never a flag: a token on the command line shows in ps
	cfg.APIToken = io.Getenv("DELAYQ_API_TOKEN")         // never a flag, like the console's
	if err := envflag.Parse(fs, args, io.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(io.Stdout, fs)
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%q: delayd takes no arguments, only flags", fs.Arg(0))}
	}
	if cmd.Version {
		fmt.Fprintln(io.Stdout, "delayd", version.Get())
		return nil
	}
	logger, err := logging.New(io.Stderr, cmd.LogFormat, cmd.LogLevel, io.Terminal)
	if err != nil {
		return usageError{err}
	}
	opts := daemon.Options{Logger: logger}
	tp, stopTraces, err := tracing.FromEnv(ctx, "delayd") // OTEL_EXPORTER_OTLP_*; none: off
	if err != nil {
		return usageError{err}
	}
	defer stopTraces(context.WithoutCancel(ctx)) //nolint:errcheck // the last spans, best effort
	if tp != nil {
		opts.TracerProvider = tp
	}
	if cmd.Embedded {
		if !given(fs, "tick") {
			cfg.Tick = time.Second
		}
		return runEmbedded(ctx, cfg, opts, io.Stdout)
	}
	d, err := daemon.New(cfg, opts)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

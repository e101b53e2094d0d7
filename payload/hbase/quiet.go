package hbase

import (
	"context"
	"log/slog"
)

// quietHandler writes every record of gohbase's logger at DEBUG. gohbase
// logs each failed RPC and each region it looks up at ERROR or INFO: while
// a RegionServer is away or its regions move, that is a line per retry.
// The stages that call the Store report such an outage once, as a stall
// (internal/retry); gohbase's detail stays for --log-level debug.
type quietHandler struct{ h slog.Handler }

func (q quietHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return q.h.Enabled(ctx, slog.LevelDebug)
}

func (q quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelDebug {
		r = r.Clone()
		r.AddAttrs(slog.String("gohbase_level", r.Level.String()))
		r.Level = slog.LevelDebug
	}
	return q.h.Handle(ctx, r)
}

func (q quietHandler) WithAttrs(as []slog.Attr) slog.Handler { return quietHandler{q.h.WithAttrs(as)} }
func (q quietHandler) WithGroup(name string) slog.Handler    { return quietHandler{q.h.WithGroup(name)} }

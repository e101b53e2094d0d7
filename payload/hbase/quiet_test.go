package hbase

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestQuietHandler: gohbase's ERROR lines are written at DEBUG, so a
// RegionServer outage logs no ERROR line per failed RPC.
func TestQuietHandler(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var out bytes.Buffer
		log := slog.New(quietHandler{slog.NewTextHandler(&out, &slog.HandlerOptions{Level: level})}).With("component", "gohbase")
		log.Error("error occured, closing region client")
		got := out.String()
		switch {
		case level == slog.LevelInfo && got != "":
			t.Errorf("at level INFO: %q, want nothing", got)
		case level == slog.LevelDebug && (!strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "gohbase_level=ERROR") || !strings.Contains(got, "component=gohbase")):
			t.Errorf("at level DEBUG: %q, want the line at DEBUG with its gohbase level", got)
		}
	}
}

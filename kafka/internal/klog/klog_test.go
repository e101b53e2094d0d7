package klog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLoggerLevels(t *testing.T) {
	tests := []struct {
		name, line, level string
	}{
		{"rebalance", "Failed to join group g: [27] Rebalance In Progress: the coordinator has begun rebalancing", "INFO"},
		{"generation", "[22] Illegal Generation: the generation id is not the current one", "INFO"},
		{"unreachable", "error initializing the kafka reader for partition 3 of t: dial tcp 127.0.0.1:9092: connect: connection refused", "WARN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			Logger(slog.New(slog.NewTextHandler(&buf, nil)))("%s", tt.line)
			if !strings.Contains(buf.String(), "level="+tt.level) || strings.Contains(buf.String(), "level=ERROR") {
				t.Fatalf("logged %q, want level %s", buf.String(), tt.level)
			}
		})
	}
}

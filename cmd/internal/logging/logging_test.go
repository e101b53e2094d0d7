package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		terminal     bool
		json         bool
	}{
		{"auto on a terminal", "", true, false},
		{"auto in a pipe", "", false, true},
		{"text asked", "text", false, false},
		{"json asked on a terminal", "json", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			l, err := New(&b, tc.format, "info", tc.terminal)
			if err != nil {
				t.Fatal(err)
			}
			l.Info("ready", "roles", "ingest")
			got := json.Valid(b.Bytes())
			if got != tc.json {
				t.Errorf("JSON = %v, want %v: %s", got, tc.json, b.String())
			}
			if !tc.json && !strings.Contains(b.String(), "msg=ready roles=ingest") {
				t.Errorf("text line %q", b.String())
			}
		})
	}
}

func TestBadFlags(t *testing.T) {
	if _, err := New(&bytes.Buffer{}, "xml", "info", false); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("format xml: %v", err)
	}
	if _, err := New(&bytes.Buffer{}, "json", "loud", false); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("level loud: %v", err)
	}
}

// TestKeysOnce: a component that adds its own "component" to the logger it
// was handed writes one component key, its own.
func TestKeysOnce(t *testing.T) {
	var b bytes.Buffer
	l, err := New(&b, "json", "debug", false)
	if err != nil {
		t.Fatal(err)
	}
	ingest := l.With("component", "ingest", "group", "g1")
	writer := ingest.With("component", "kafka_writer")
	writer.Warn("kafka_client", "detail", "x", "group", "g2")
	writer.WithGroup("req").Info("grouped", "component", "inner")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines: %q", lines)
	}
	if strings.Count(lines[0], `"component"`) != 1 || strings.Count(lines[0], `"group"`) != 1 {
		t.Errorf("duplicate keys: %s", lines[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m["component"] != "kafka_writer" || m["group"] != "g2" || m["detail"] != "x" {
		t.Errorf("line %v: want the innermost values", m)
	}
	if !strings.Contains(lines[1], `"component":"kafka_writer","group":"g1","req":{"component":"inner"}`) {
		t.Errorf("grouped line %s", lines[1])
	}
}

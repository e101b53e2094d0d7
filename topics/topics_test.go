package topics

import (
	"strings"
	"testing"
)

func TestInternal(t *testing.T) {
	tests := []struct {
		topic string
		want  bool
	}{
		{Input, true},
		{Slow, true},
		{Scan, true},
		{Failed, true},
		{"__consumer_offsets", true},
		{"__anything", true},
		{"orders", false},
		{"delay-input2", false},
		{"_single", false},
		{"", false},
		{"_schemas", true},
		{"_confluent-command", true},
		{"_confluent-metrics", true},
		{"connect-configs", true},
		{"connect-offsets", true},
		{"connect-status", true},
		{"__transaction_state", true},
		{"connect-mine", false},
	}
	for _, tt := range tests {
		if got := Internal(tt.topic); got != tt.want {
			t.Errorf("Internal(%q) = %v, want %v", tt.topic, got, tt.want)
		}
	}
}

func TestAllow(t *testing.T) {
	tests := []struct {
		patterns []string
		allowed  []string
		refused  []string
	}{
		{nil, []string{"orders", "orders.eu", "a_b", "connect"},
			[]string{"_schemas", "connect-configs", "connect-offsets", "connect-status", "_confluent-command",
				"__consumer_offsets", "__transaction_state", Input, Slow, Scan, Failed, "_private", "connect-mine"}},
		{[]string{"orders", "billing.*"}, []string{"orders", "billing.", "billing.eu"},
			[]string{"orders.eu", "billing", "payments", "_private"}},
		{[]string{"_private", "connect-mine"}, []string{"_private", "connect-mine"}, []string{"_schemas", "orders"}},
		{[]string{"*"}, []string{"orders", "_private", "connect-mine"},
			[]string{"_schemas", "_confluent-command", "connect-configs", "__consumer_offsets", Input, Failed}},
		{[]string{"_*", "delay-*"}, []string{"_private", "delay-x"}, []string{"_schemas", "__x", Input, Scan}},
	}
	for _, tt := range tests {
		allow := Allow(tt.patterns)
		for _, topic := range tt.allowed {
			if !allow(topic) {
				t.Errorf("Allow(%q)(%q) = false, want true", tt.patterns, topic)
			}
		}
		for _, topic := range tt.refused {
			if allow(topic) {
				t.Errorf("Allow(%q)(%q) = true, want false", tt.patterns, topic)
			}
		}
	}
	if err := CheckPatterns([]string{"orders", "orders.*", "*", "_x"}); err != nil {
		t.Errorf("CheckPatterns: %v", err)
	}
	err := CheckPatterns([]string{"bad topic", "a*b", "**", "ok"})
	for _, p := range []string{`"bad topic"`, `"a*b"`, `"**"`} {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("CheckPatterns error %v does not name %s", err, p)
		}
	}
}

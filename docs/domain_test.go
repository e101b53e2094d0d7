package docs

import (
	"strings"
	"testing"
)

// domainPackages hold delayq's task model and its rules: they speak
// payload.Message and payload.Header, never a Kafka client's types
// (STYLE.md 15), so that a change of client touches kafka/ and the edges
// where a stage meets a reader or writer.
var domainPackages = []string{"payload", "taskstate", "zset", "internal/tracing"}

// TestDomainFreeOfKafkaGo: no domain package builds on kafka-go, directly
// or through another package (its non-test files, as `go list -deps`
// reads them).
func TestDomainFreeOfKafkaGo(t *testing.T) {
	for _, p := range domainPackages {
		for _, dep := range goList(t, "-deps", "./"+p) {
			if dep == "github.com/segmentio/kafka-go" || strings.HasPrefix(dep, "github.com/segmentio/kafka-go/") {
				t.Errorf("%s builds on %s: convert at the edge with kafka/record instead", p, dep)
			}
		}
	}
}

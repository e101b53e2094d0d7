package tenant_test

import (
	"testing"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/tenant"
	"github.com/delayq/delayq/topics"
)

// TestToday: the Default tenant is today's deployment: its topics are
// package topics' names and its ids are payload.TaskID's.
func TestToday(t *testing.T) {
	got := tenant.TopicsOf(tenant.Default)
	if got.Input != topics.Input || got.Slow != topics.Slow || got.Failed != topics.Failed {
		t.Fatalf("TopicsOf(default) = %+v, want %s, %s, %s", got, topics.Input, topics.Slow, topics.Failed)
	}
	for _, name := range []string{"order-1", "42", "9223372036854775807", "delay-input/3/17", "é"} {
		if id, want := tenant.ID(tenant.Default, name, payload.TaskID), payload.TaskID(name); id != want {
			t.Errorf("ID(default, %q) = %d, want TaskID's %d", name, id, want)
		}
		if id := tenant.ID("a", name, payload.TaskID); id > payload.MaxID || id == payload.TaskID(name) {
			t.Errorf("ID(a, %q) = %d: over MaxID or today's id", name, id)
		}
	}
}

// TestLegal: a topic the rules accept is a topic package topics accepts,
// and no tenant's own topic is one a task may name.
func TestLegal(t *testing.T) {
	for _, topic := range []string{"orders", "a.b", "A_b-9", ".", "..", "", "a b", "é", string(make([]byte, 250)), "x" + string(make([]byte, 248))} {
		r := tenant.Rules{}
		if r.MayWrite(topic) && !topics.Legal(topic) {
			t.Errorf("MayWrite(%q) but topics.Legal refuses it", topic)
		}
		err := tenant.Rules{Topics: []string{topic}}.Validate()
		if (err == nil) != topics.Legal(topic) {
			t.Errorf("Validate(%q) = %v, topics.Legal = %v", topic, err, topics.Legal(topic))
		}
	}
	for _, tn := range []string{tenant.Default, "a"} {
		ts := tenant.TopicsOf(tn)
		for _, own := range []string{ts.Input, ts.Slow, ts.Failed, topics.Scan} {
			if (tenant.Rules{}).MayWrite(own) {
				t.Errorf("MayWrite(%q): a tenant may name delayq's own topic", own)
			}
		}
	}
}

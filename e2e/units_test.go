package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/topics"
)

// TestEmbeddedUnixSeconds: a producer that sends unix seconds where delayq
// takes milliseconds, as `kcat -H delay-at=$(( $(date +%s) + 2 ))` does,
// gets its message in delay-failed with a reason that names the unit; it
// is never delivered (it was read as 1970-01-21 and delivered at once
// before). The same for delay-until and a reschedule's new time. A task
// in ms sent with them is delivered.
func TestEmbeddedUnixSeconds(t *testing.T) {
	e := embeddedEnv(t)
	topic := e.Topic("units")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	e2etest.WaitFor(t, 30*time.Second, "delay-input to exist", func() bool {
		return admin.Ensure(context.Background(), e.Brokers, nil, []admin.Spec{{Name: topics.Input}}) == nil
	})
	now := time.Now()
	secs := strconv.FormatInt(now.Unix()+2, 10)
	msg := func(seq string, kv ...string) kafka.Message {
		hs := []kafka.Header{{Key: "seq", Value: []byte(e.Seq(seq))}}
		for i := 0; i+1 < len(kv); i += 2 {
			hs = append(hs, kafka.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return kafka.Message{Value: []byte(seq), Time: now, Headers: hs}
	}
	bad := map[string]string{
		e.Seq("at"):         "delay-at: " + secs + " looks like unix seconds; delay-at is unix milliseconds (" + secs + "000)",
		e.Seq("until"):      "delay-until: " + secs + " looks like unix seconds; delay-until is unix milliseconds (" + secs + "000)",
		e.Seq("reschedule"): "delay-at: " + secs + " looks like unix seconds",
	}
	e.Produce(t.Context(), []kafka.Message{
		msg("at", "delay-topic", topic, "delay-at", secs),
		msg("until", "delay-topic", topic, "delay-after", "2s", "delay-every", "1h", "delay-until", secs),
		msg("reschedule", "delay-op", "reschedule", "delay-id", e.Run+"-r", "delay-at", secs),
		msg("ms", "delay-topic", topic, "delay-at", secs+"000"),
	})

	e2etest.WaitFor(t, 60*time.Second, "the task in ms delivered and the three in delay-failed", func() bool {
		n := 0
		for _, g := range failed.Snapshot() {
			if _, ok := bad[e2etest.Header(g.Msg, "seq")]; ok {
				n++
			}
		}
		return n == len(bad) && out.Len() >= 1
	})
	for _, g := range failed.Snapshot() {
		seq, reason := e2etest.Header(g.Msg, "seq"), e2etest.Header(g.Msg, "delay-error")
		if want, ok := bad[seq]; ok && !strings.Contains(reason, want) {
			t.Errorf("%s: delay-error %q, want it to say %q", seq, reason, want)
		} else if ok {
			t.Logf("delay-failed %s: %s", seq, reason)
		}
	}
	for _, g := range out.Snapshot() {
		if seq := e2etest.Header(g.Msg, "seq"); seq != e.Seq("ms") {
			t.Errorf("delivered %s (value %q); only the task in ms may be", seq, g.Msg.Value)
		}
	}
}

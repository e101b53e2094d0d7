package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/topics"
)

// TestSloppyProducer is the outside-client scenario of issue 11: valid
// tasks written to one partition together with a delay-at of 0, a 1970
// RFC 3339 time, a task too large for its business topic's
// max.message.bytes, a task for a topic outside --allow-topics (the local
// broker auto-creates topics, so "missing" means "not allowed" here), and
// one id reused at two due times in one segment. Every valid task is
// delivered exactly once; each bad message goes to delay-failed alone,
// with its reason.
func TestSloppyProducer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	topic, small, other := e.Topic("orders"), e.Topic("small"), e.Topic("typo")
	createTopic(t, e.Brokers, small, map[string]string{"max.message.bytes": "2048"})
	out, smallOut, failed := e.Collect(topic), e.Collect(small), e.Collect(topics.Failed)
	e.Start("d0", "--allow-topics", topic+","+small)

	now := time.Now().Truncate(time.Millisecond)
	key := []byte("one-partition") // every message in one partition, so in one ingest batch
	l := e2etest.NewLedger()
	var msgs []kafka.Message
	add := func(m kafka.Message) { m.Key = key; msgs = append(msgs, m) }
	for i := range 40 {
		seq := e.Seq(fmt.Sprint(i))
		at := now.Add(time.Duration(3+i%8) * time.Second)
		add(e2etest.TaskMessage(topic, seq, fmt.Sprintf("%s-%d", e.Run, i), now, at, i))
		l.Due[seq] = e2etest.Due{At: at}
	}
	// One id at two due times in one (1-minute) segment: two tasks.
	t1 := now.Add(5 * time.Second)
	if t1.Truncate(time.Minute) != t1.Add(2*time.Second).Truncate(time.Minute) {
		t1 = t1.Truncate(time.Minute).Add(time.Minute + time.Second)
	}
	for i, at := range []time.Time{t1, t1.Add(1500 * time.Millisecond)} {
		seq := e.Seq(fmt.Sprintf("reused-%d", i))
		add(e2etest.TaskMessage(topic, seq, e.Run+"-reused", now, at, 1))
		l.Due[seq] = e2etest.Due{At: at}
	}
	// The bad ones, each with a fragment of the reason it must get.
	bad := map[string]string{}
	quarantine := func(name, reason string, m kafka.Message) {
		seq := e.Seq("bad-" + name)
		if e2etest.Header(m, "seq") == "" {
			m.Headers = append(m.Headers, kafka.Header{Key: "seq", Value: []byte(seq)})
		}
		bad[seq] = reason
		add(m)
	}
	hdr := func(kv ...string) []kafka.Header {
		var hs []kafka.Header
		for i := 0; i < len(kv); i += 2 {
			hs = append(hs, kafka.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return hs
	}
	quarantine("epoch-0", "epoch", kafka.Message{Value: []byte("x"), Time: now, Headers: hdr("delay-topic", topic, "delay-at", "0")})
	quarantine("epoch-1970", "epoch", kafka.Message{Value: []byte("x"), Time: now,
		Headers: hdr("delay-topic", topic, "delay-at", "1970-01-01T00:00:00Z")})
	quarantine("typo-topic", "not allowed", kafka.Message{Value: []byte("x"), Time: now, Headers: hdr("delay-topic", other, "delay-after", "2s")})
	big := e2etest.TaskMessage(small, e.Seq("bad-too-large"), e.Run+"-big", now, now.Add(4*time.Second), 1)
	big.Value = bytes.Repeat([]byte("v"), 4096)
	quarantine("too-large", "", big)
	// Interleave: the bad ones between the good ones of the same batch.
	for i, j := len(msgs)-len(bad), 5; i < len(msgs); i, j = i+1, j+9 {
		msgs[i], msgs[j] = msgs[j], msgs[i]
	}
	e.Produce(ctx, msgs)

	r := awaitDelivery(l, out, 60*time.Second)
	t.Logf("TestSloppyProducer: %v", r)
	mustBeClean(t, r)
	if r.Delivered != len(l.Due) {
		t.Errorf("delivered %d of %d valid tasks", r.Delivered, len(l.Due))
	}
	e2etest.WaitFor(t, 30*time.Second, "every bad message in delay-failed", func() bool {
		n := 0
		for _, g := range failed.Snapshot() {
			if _, ok := bad[e2etest.Header(g.Msg, "seq")]; ok {
				n++
			}
		}
		return n >= len(bad)
	})
	time.Sleep(2 * time.Second) // anything else that would land there
	got := map[string]int{}
	for _, g := range failed.Snapshot() {
		seq, reason := e2etest.Header(g.Msg, "seq"), e2etest.Header(g.Msg, "delay-error")
		if _, due := l.Due[seq]; due {
			t.Errorf("valid task %s in delay-failed: %s", seq, reason)
		}
		want, ok := bad[seq]
		if !ok {
			continue
		}
		got[seq]++
		t.Logf("delay-failed %s: %s", seq, reason)
		if reason == "" || !strings.Contains(reason, want) {
			t.Errorf("%s: delay-error %q, want it to say %q", seq, reason, want)
		}
	}
	for seq := range bad {
		if got[seq] != 1 {
			t.Errorf("%s in delay-failed %d times, want once", seq, got[seq])
		}
	}
	if n := smallOut.Len(); n != 0 {
		t.Errorf("%d messages reached %s, whose max.message.bytes refuses the task", n, small)
	}
}

// createTopic creates topic with one partition and the given configs, and
// deletes it when the test ends.
func createTopic(t *testing.T, brokers []string, topic string, configs map[string]string) {
	t.Helper()
	var entries []kafka.ConfigEntry
	for k, v := range configs {
		entries = append(entries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second}
	resp, err := client.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: entries,
	}}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		client.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	})
}

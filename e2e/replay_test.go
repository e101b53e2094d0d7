package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/failed"
	kafkarecord "github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
)

// buildDelayctl builds cmd/delayctl into the test's temporary directory.
func buildDelayctl(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "delayctl")
	out, err := exec.Command("go", "build", "-o", path, "github.com/delayq/delayq/cmd/delayctl").CombinedOutput()
	if err != nil {
		tb.Fatalf("go build delayctl: %v\n%s", err, out)
	}
	return path
}

// delayctl runs the delayctl binary against this test's stack and returns
// its stdout; any exit code but 0 fails the test.
func delayctl(e *e2etest.Env, bin string, args ...string) string {
	e.T.Helper()
	full := append(args, "--brokers", strings.Join(e.Brokers, ","), "--progress", "none")
	cmd := exec.Command(bin, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		e.T.Fatalf("delayctl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	e.T.Logf("delayctl %s:\n%s", strings.Join(args, " "), stdout.String())
	return stdout.String()
}

// TestReplayDeliversOnce makes delayd send valid tasks to delay-failed for
// causes an operator can fix, fixes them, replays with the delayctl binary
// and checks that every task is delivered exactly once, with its original
// key, value and headers and a trace of the failed message:
//
//   - A: refused by ingest (business topic not in --allow-topics), due in a
//     minute; replayed twice before it is due: one task each.
//   - B: refused by ingest the same way, due in the past; replayed once:
//     delivered at once.
//   - C: stored, then refused by its business topic (max.message.bytes
//     below the message), which the scanner sends to delay-failed; the
//     topic's limit is raised and the task replayed with its id and due
//     time.
//
// The fix for A and B is a restart of delayd with a wider --allow-topics.
func TestReplayDeliversOnce(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bizA, bizB, bizC := e.Topic("replay-a"), e.Topic("replay-b"), e.Topic("replay-c")
	client := &kafka.Client{Addr: kafka.TCP(e.Brokers...), Timeout: 10 * time.Second}
	res, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: bizC, NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: "1024"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Errors[bizC]; err != nil {
		t.Fatalf("create %s: %v", bizC, err)
	}
	outA, outB, outC := e.Collect(bizA), e.Collect(bizB), e.Collect(bizC)
	ctl := buildDelayctl(t) // before the clock starts

	d := e.Start("d0", "--allow-topics", bizC)
	t0 := time.Now().Truncate(time.Millisecond) // record timestamps are in ms
	dueA := t0.Add(60 * time.Second).Truncate(time.Millisecond)
	type task struct {
		topic string
		due   time.Time
		id    string // given delay-id, "" for none
	}
	want := map[string]task{} // by seq header
	var msgs []kafka.Message
	add := func(seq, topic string, due time.Time, id string, value []byte, hs ...string) {
		m := kafka.Message{Key: []byte(seq), Value: value, Time: t0,
			Headers: []kafka.Header{{Key: "seq", Value: []byte(seq)}, {Key: payload.HeaderTopic, Value: []byte(topic)}}}
		for i := 0; i < len(hs); i += 2 {
			m.Headers = append(m.Headers, kafka.Header{Key: hs[i], Value: []byte(hs[i+1])})
		}
		if id != "" {
			m.Headers = append(m.Headers, kafka.Header{Key: payload.HeaderID, Value: []byte(id)})
		}
		msgs = append(msgs, m)
		want[seq] = task{topic: topic, due: due, id: id}
	}
	for i := range 6 {
		seq, id := "A"+strconv.Itoa(i), ""
		if i%2 == 1 {
			id = e.Run + "-" + seq
		}
		if i < 3 {
			add(seq, bizA, dueA, id, []byte("value "+seq), payload.HeaderAt, strconv.FormatInt(dueA.UnixMilli(), 10))
		} else {
			add(seq, bizA, dueA, id, []byte("value "+seq), payload.HeaderAfter, dueA.Sub(t0).String())
		}
	}
	for i := range 4 {
		seq, id := "B"+strconv.Itoa(i), ""
		if i%2 == 1 {
			id = e.Run + "-" + seq
		}
		add(seq, bizB, t0.Add(-time.Hour), id, []byte("value "+seq), payload.HeaderAt, payload.FormatTime(t0.Add(-time.Hour).UnixMilli()))
	}
	big := bytes.Repeat([]byte("c"), 4096) // over bizC's max.message.bytes
	add("C0", bizC, t0.Add(time.Second), "", big, payload.HeaderAfter, "1s")
	add("C1", bizC, t0.Add(time.Second), e.Run+"-C1", big, payload.HeaderAfter, "1s")
	e.Produce(ctx, msgs)

	from := t0.Add(-time.Second)
	failedOf := func(topic string, since time.Time) []failed.Record {
		var out []failed.Record
		_, err := failed.Scan(ctx, failed.Config{Brokers: e.Brokers}, failed.Filter{From: since, To: time.Now().Add(time.Second), Topic: topic},
			func(r failed.Record) error { out = append(out, r); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	e2etest.WaitFor(t, 60*time.Second, "the refusals in delay-failed", func() bool {
		return len(failedOf(bizA, from)) == 6 && len(failedOf(bizB, from)) == 4 && len(failedOf(bizC, from)) == 2
	})
	for _, r := range failedOf(bizC, from) {
		if r.Source != "" || r.ID == "" || !strings.Contains(strings.ToLower(r.Reason), "too large") {
			t.Errorf("scanner refusal %s: source %q, id %q, reason %q", r.Position(), r.Source, r.ID, r.Reason)
		}
	}
	if n := len(outA.Snapshot()) + len(outB.Snapshot()) + len(outC.Snapshot()); n != 0 {
		t.Fatalf("%d messages delivered before the fix", n)
	}

	// The fixes: a wider allow-list, a larger message limit for bizC.
	ares, err := client.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{
		Resources: []kafka.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: bizC,
			Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "max.message.bytes", Value: "1048588", ConfigOperation: kafka.ConfigOperationSet}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ares.Resources {
		if r.Error != nil {
			t.Fatalf("raise max.message.bytes of %s: %v", bizC, r.Error)
		}
	}
	d.Stop(t)
	e.Start("d1", "--allow-topics", strings.Join([]string{bizA, bizB, bizC}, ","))

	rangeArgs := []string{"--from", strconv.FormatInt(from.UnixMilli(), 10), "--to", strconv.FormatInt(time.Now().Add(time.Second).UnixMilli(), 10)}
	replay := func(extra ...string) string {
		return delayctl(e, ctl, append(append([]string{"replay"}, rangeArgs...), extra...)...)
	}

	dry := replay("--topic", bizA, "--dry-run")
	if n := strings.Count(dry, "-> delay-input "); n != 6 || summary(dry, "would replay") != 6 {
		t.Errorf("dry run lists %d messages, want 6:\n%s", n, dry)
	}
	for i := range 2 {
		out := replay("--topic", bizA, "--reason", "not allowed")
		if summary(out, "replayed") != 6 || summary(out, "matched") != 6 {
			t.Fatalf("replay %d of A:\n%s", i+1, out)
		}
	}
	left := time.Until(dueA)
	if left < 5*time.Second {
		t.Fatalf("A was replayed only %v before it is due: too late to show that two replays are one task", left)
	}
	if out := replay("--topic", bizB, "--reason", "NOT ALLOWED"); summary(out, "replayed") != 4 {
		t.Fatalf("replay of B:\n%s", out)
	}
	if out := replay("--topic", bizC, "--reason", "too large", "--limit", "10"); summary(out, "replayed") != 2 {
		t.Fatalf("replay of C:\n%s", out)
	}

	// Every task exactly once, none early, as the producer wrote it.
	all := func() []e2etest.Received {
		return append(append(outA.Snapshot(), outB.Snapshot()...), outC.Snapshot()...)
	}
	e2etest.WaitFor(t, time.Until(dueA)+30*time.Second, "every replayed task delivered", func() bool {
		seen := map[string]bool{}
		for _, g := range all() {
			seen[e2etest.Header(g.Msg, "seq")] = true
		}
		return len(seen) == len(want)
	})
	time.Sleep(3 * time.Second) // three ticks: a duplicate shows up here
	got := map[string]int{}
	sources := map[string]string{}
	for _, f := range append(append(failedOf(bizA, from), failedOf(bizB, from)...), failedOf(bizC, from)...) {
		sources[string(f.Message.Key)] = f.Source
	}
	for _, g := range all() {
		seq := e2etest.Header(g.Msg, "seq")
		w, ok := want[seq]
		got[seq]++
		switch {
		case !ok:
			t.Errorf("unknown message delivered: %v", g.Msg)
			continue
		case g.Msg.Topic != w.topic:
			t.Errorf("%s delivered to %s, want %s", seq, g.Msg.Topic, w.topic)
		case g.At.Before(w.due.Add(-time.Second)):
			t.Errorf("%s delivered %v early", seq, w.due.Sub(g.At))
		}
		if !bytes.Equal(g.Msg.Value, msgs[indexOf(msgs, seq)].Value) {
			t.Errorf("%s: value changed", seq)
		}
		// Provenance stays in delay-input: ingest drops it like a producer's.
		if of := e2etest.Header(g.Msg, failed.HeaderReplayOf); of != "" {
			t.Errorf("%s: delay-replay-of %q reached the business topic", seq, of)
		}
		id := e2etest.Header(g.Msg, payload.HeaderID)
		switch {
		case w.id != "" && id != w.id:
			t.Errorf("%s: delay-id %q, want the given %q", seq, id, w.id)
		case w.id == "" && !strings.HasPrefix(id, "delay-input/"):
			t.Errorf("%s: delay-id %q, want the input position ingest derived", seq, id)
		}
		if src := sources[seq]; src != "" && w.id == "" && id != src {
			t.Errorf("%s: delay-id %q; the failed message came from %s", seq, id, src)
		}
		if at := e2etest.Header(g.Msg, payload.HeaderAt); at != payload.FormatTime(w.due.UnixMilli()) {
			t.Errorf("%s: delay-at %s, want %s", seq, at, payload.FormatTime(w.due.UnixMilli()))
		}
	}
	dups := 0
	for seq := range want {
		switch got[seq] {
		case 1:
		case 0:
			t.Errorf("%s not delivered", seq)
		default:
			dups += got[seq] - 1
			t.Errorf("%s delivered %d times", seq, got[seq])
		}
	}
	// A replayed copy that failed again keeps its original timestamp: it
	// is a second failed record of its seq.
	again := 0
	failures := map[string]int{}
	for _, topic := range []string{bizA, bizB, bizC} {
		for _, r := range failedOf(topic, from) {
			seq := e2etest.Header(kafkarecord.FromMessage(r.Message), "seq")
			if failures[seq]++; failures[seq] > 1 {
				again++
				t.Errorf("replayed message failed again: %s %s", r.Position(), r.Reason)
			}
		}
	}
	t.Logf("A: 6 tasks replayed twice, due %v after the second replay; B: 4 past-due tasks, C: 2 scanner refusals, "+
		"each replayed once: %d delivered of %d, %d duplicates, %d failed again",
		left.Round(time.Second), len(all()), len(want), dups, again)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("out of time")
	}
}

func indexOf(msgs []kafka.Message, seq string) int {
	for i, m := range msgs {
		if e2etest.Header(m, "seq") == seq {
			return i
		}
	}
	return -1
}

// summary reads a count from delayctl replay's summary: the line
// "  <label>   <n>".
func summary(out, label string) int {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "  "+label+" ")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
			return n
		}
	}
	return -1
}

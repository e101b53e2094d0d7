package failed_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/failed"
	"github.com/delayq/delayq/ingest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// The failed-message headers are ingest's; the two packages must agree.
func TestHeadersAreIngests(t *testing.T) {
	for _, c := range [][2]string{
		{failed.HeaderSourceTopic, ingest.HeaderSourceTopic},
		{failed.HeaderSourcePartition, ingest.HeaderSourcePartition},
		{failed.HeaderSourceOffset, ingest.HeaderSourceOffset},
	} {
		if c[0] != c[1] {
			t.Errorf("failed says %q, ingest writes %q", c[0], c[1])
		}
	}
}

// ownTopics creates this test's failed, input and slow topics.
func ownTopics(t *testing.T, ctx context.Context, brokers []string, failedParts int) failed.Config {
	t.Helper()
	run := strconv.FormatInt(time.Now().UnixNano(), 10)
	cfg := failed.Config{
		Brokers: brokers,
		Failed:  "dqtest-failed-" + run,
		Input:   "dqtest-failed-in-" + run,
		Slow:    "dqtest-failed-slow-" + run,
	}
	err := admin.Ensure(ctx, brokers, nil, []admin.Spec{
		{Name: cfg.Failed, Partitions: failedParts, ReplicationFactor: 1},
		{Name: cfg.Input, Partitions: 2, ReplicationFactor: 1},
		{Name: cfg.Slow, Partitions: 2, ReplicationFactor: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestScanTimeRange writes failed records with chosen timestamps, out of
// time order, to partition 0 of a two-partition topic and checks what a
// scan reads and matches: from the first record stamped at From to the
// first stamped at To+Slack, and only records in [From, To).
func TestScanTimeRange(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	brokers := stacktest.Kafka(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cfg := ownTopics(t, ctx, brokers, 2)
	base := time.Now().Add(-30 * time.Minute).Truncate(time.Millisecond)

	records := []struct {
		name   string
		at     time.Duration // after base
		reason string
	}{
		{"before", -10 * time.Minute, "alpha"},
		{"in1", time.Second, "alpha"},
		{"after", 40 * time.Second, "alpha"},  // past To, within the slack
		{"in2-late", 2 * time.Second, "beta"}, // in range, written after "after"
		{"far", 5 * time.Minute, "alpha"},     // past To+Slack: the stop
		{"in3-beyond", 3 * time.Second, "beta"},
	}
	w := &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Balancer:     kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 }),
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
	}
	defer w.Close()
	for _, r := range records { // one by one: one record per offset, in this order
		err := w.WriteMessages(ctx, kafka.Message{Topic: cfg.Failed, Key: []byte(r.name), Value: []byte(r.name), Time: base.Add(r.at),
			Headers: []kafka.Header{{Key: payload.HeaderTopic, Value: []byte("orders")}, {Key: payload.HeaderError, Value: []byte(r.reason)}}})
		if err != nil {
			t.Fatal(err)
		}
	}

	scan := func(t *testing.T, f failed.Filter) ([]string, failed.Stats) {
		t.Helper()
		var got []string
		st, err := failed.Scan(ctx, cfg, f, func(r failed.Record) error {
			if r.Partition != 0 || r.Topic != cfg.Failed {
				t.Errorf("record %s at %s", r.Message.Key, r.Position())
			}
			got = append(got, string(r.Message.Key))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, st
	}
	tests := []struct {
		name    string
		f       failed.Filter
		want    []string
		scanned int64
	}{
		{"range", failed.Filter{From: base, To: base.Add(10 * time.Second)}, []string{"in1", "in2-late"}, 3},
		{"reason", failed.Filter{From: base, To: base.Add(10 * time.Second), Reason: "BETA"}, []string{"in2-late"}, 3},
		{"topic", failed.Filter{From: base, To: base.Add(10 * time.Second), Topic: "other"}, nil, 3},
		{"limit", failed.Filter{From: base, To: base.Add(10 * time.Second), Limit: 1}, []string{"in1"}, 1},
		{"wide", failed.Filter{From: base.Add(-time.Hour), To: base.Add(time.Hour)},
			[]string{"before", "in1", "after", "in2-late", "far", "in3-beyond"}, 6},
		{"nothing that late", failed.Filter{From: base.Add(10 * time.Minute), To: base.Add(20 * time.Minute)}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, st := scan(t, tt.f)
			if !slices.Equal(got, tt.want) {
				t.Errorf("matched %v, want %v", got, tt.want)
			}
			if st.Scanned != tt.scanned || st.Matched != int64(len(tt.want)) || st.Partitions != 2 {
				t.Errorf("stats %+v, want %d scanned, %d matched, 2 partitions", st, tt.scanned, len(tt.want))
			}
			if tt.f.Limit == 0 && st.Total != st.Scanned {
				t.Errorf("total %d, scanned %d: the offsets to read were not known up front", st.Total, st.Scanned)
			}
		})
	}

	_, err := failed.Scan(ctx, failed.Config{Brokers: brokers, Failed: cfg.Failed + "-missing"},
		failed.Filter{From: base, To: base.Add(time.Second)}, func(failed.Record) error { return nil })
	if err == nil {
		t.Error("scan of a missing topic: no error")
	}
}

// recordingIndex is an ingest.Index that keeps what it was given.
type recordingIndex struct {
	mu      sync.Mutex
	entries map[zset.Entry]int
}

func (x *recordingIndex) Add(_ context.Context, _ time.Time, entries []zset.Entry) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, e := range entries {
		x.entries[e]++
	}
	return nil
}

// Forget drops the entries.
func (x *recordingIndex) Forget(_ context.Context, _ time.Time, entries []zset.Entry) (int64, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var n int64
	for _, e := range entries {
		if _, ok := x.entries[e]; ok {
			n++
			delete(x.entries, e)
		}
	}
	return n, nil
}

// FlagOps keeps no flags; Flagged says every id is flagged, as an index
// without flags must.
func (x *recordingIndex) FlagOps(context.Context, []uint64, time.Duration) error { return nil }

func (x *recordingIndex) Flagged(_ context.Context, ids []uint64) ([]bool, error) {
	out := make([]bool, len(ids))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

func (x *recordingIndex) distinct() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries)
}

// TestReplayThroughIngest runs the real ingester on the test's own topics
// with an allow-list that refuses the business topic, so that it writes
// real failed messages; replays them twice (after a dry run); checks what
// lands in the input topics; and runs the ingester again, now allowing the
// topic, to check that the two replays are one task each and fail no more.
func TestReplayThroughIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	brokers := stacktest.Kafka(t)
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	cfg := ownTopics(t, ctx, brokers, 3)
	biz, allowed := cfg.Failed+"-biz", cfg.Failed+"-ok"
	store, ix := payload.NewMemory(), &recordingIndex{entries: map[zset.Entry]int{}}
	w := producer.New(producer.Config{Brokers: brokers})
	defer w.Close()

	runIngest := func(allow func(string) bool) (stop func()) {
		in, err := ingest.New(ingest.Config{
			Brokers: brokers, GroupID: cfg.Failed + "-group",
			Input: cfg.Input, Slow: cfg.Slow, Failed: cfg.Failed,
			Decode: payload.DecodeConfig{AllowTopic: allow},
		}, store, ix, w)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- in.Run(runCtx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("ingest: %v", err)
			}
		}
	}

	// The input: six tasks for biz on the input topic (four without
	// delay-id), two without delay-id on the slow topic, one malformed
	// and one valid for an allowed topic.
	start := time.Now().Truncate(time.Millisecond)
	due := strconv.FormatInt(start.Add(10*time.Minute).UnixMilli(), 10)
	var msgs []kafka.Message
	add := func(topic, key string, hs ...string) {
		m := kafka.Message{Topic: topic, Key: []byte(key), Value: []byte("value of " + key), Time: time.Now()}
		for i := 0; i < len(hs); i += 2 {
			m.Headers = append(m.Headers, kafka.Header{Key: hs[i], Value: []byte(hs[i+1])})
		}
		msgs = append(msgs, m)
	}
	for i := range 4 {
		add(cfg.Input, "derived-"+strconv.Itoa(i), "delay-topic", biz, "delay-after", "10m", "trace", "t"+strconv.Itoa(i))
	}
	for i := range 2 {
		add(cfg.Input, "named-"+strconv.Itoa(i), "delay-topic", biz, "delay-at", due, "delay-id", fmt.Sprintf("%s-named-%d", biz, i))
	}
	for i := range 2 {
		add(cfg.Slow, "slow-"+strconv.Itoa(i), "delay-topic", biz, "delay-after", "10m")
	}
	add(cfg.Input, "malformed", "delay-topic", allowed, "delay-at", "tomorrow")
	add(cfg.Input, "valid", "delay-topic", allowed, "delay-after", "10m")
	const refused = 8

	stop := runIngest(func(topic string) bool { return topic == allowed })
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	notAllowed := failed.Filter{From: start.Add(-time.Second), To: time.Now().Add(time.Second), Reason: "NOT ALLOWED"}
	count := func(f failed.Filter) int64 {
		t.Helper()
		st, err := failed.Scan(ctx, cfg, f, func(failed.Record) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return st.Matched
	}
	waitFor(t, ctx, "the refused messages in the failed topic", func() bool { return count(notAllowed) == refused })
	stop()
	if n := count(failed.Filter{From: notAllowed.From, To: notAllowed.To}); n != refused+1 {
		t.Fatalf("%d failed messages, want %d refused and the malformed one", n, refused)
	}
	if store.Len() != 1 {
		t.Fatalf("%d stored rows before the replay, want the valid task alone", store.Len())
	}

	// Dry run: lists, writes nothing.
	hwm := highWaterMarks(t, ctx, brokers, cfg.Input, cfg.Slow)
	var listed []string
	st, err := failed.Replay(ctx, cfg, notAllowed, nil, failed.Options{DryRun: true, Each: func(r failed.Record, m payload.Message) {
		listed = append(listed, r.Position()+" -> "+m.Topic)
	}})
	if err != nil || st.Matched != refused || st.Replayed != refused || st.Skipped != 0 {
		t.Fatalf("dry run: %+v, %v", st, err)
	}
	if len(listed) != refused {
		t.Errorf("dry run listed %v", listed)
	}
	if after := highWaterMarks(t, ctx, brokers, cfg.Input, cfg.Slow); !slices.Equal(after, hwm) {
		t.Fatalf("dry run wrote: high-water marks %v, then %v", hwm, after)
	}
	if st, err := failed.Replay(ctx, cfg, failed.Filter{From: notAllowed.From, To: notAllowed.To, Limit: 3}, nil, failed.Options{DryRun: true}); err != nil || st.Matched != 3 {
		t.Fatalf("limit 3: %+v, %v", st, err)
	}

	// Two replays of the same range.
	for i := range 2 {
		var progressed int
		st, err := failed.Replay(ctx, cfg, notAllowed, w, failed.Options{Progress: func(failed.Stats) { progressed++ }})
		if err != nil || st.Matched != refused || st.Replayed != refused || st.Scanned != refused+1 {
			t.Fatalf("replay %d: %+v, %v", i+1, st, err)
		}
		if progressed == 0 {
			t.Errorf("replay %d: no progress reported", i+1)
		}
	}

	// What landed: two identical copies of each refused message, in its
	// original lane, each the same task as the original.
	landed := readFrom(t, ctx, brokers, hwm, cfg.Input, cfg.Slow)
	if len(landed) != 2*refused {
		t.Fatalf("%d messages landed in the input topics, want %d", len(landed), 2*refused)
	}
	byFailed := map[string][]kafka.Message{}
	for _, m := range landed {
		of := header(m, failed.HeaderReplayOf)
		byFailed[of] = append(byFailed[of], m)
	}
	if len(byFailed) != refused {
		t.Fatalf("copies of %d failed messages, want %d: %v", len(byFailed), refused, byFailed)
	}
	origByKey := map[string]kafka.Message{}
	for _, m := range msgs {
		origByKey[string(m.Key)] = m
	}
	for of, copies := range byFailed {
		a, b := copies[0], copies[1]
		if len(copies) != 2 {
			t.Errorf("%s: %d copies", of, len(copies))
			continue
		}
		orig := origByKey[string(a.Key)]
		if a.Topic != orig.Topic {
			t.Errorf("%s (%s) replayed to %s, read from %s", of, a.Key, a.Topic, orig.Topic)
		}
		if !a.Time.Equal(orig.Time.Truncate(time.Millisecond)) || !b.Time.Equal(a.Time) {
			t.Errorf("%s: timestamps %v and %v, original %v", of, a.Time, b.Time, orig.Time)
		}
		src := header(a, failed.HeaderReplaySource)
		ta, err := payload.Decode(record.ToMessage(a), time.Now(), payload.DecodeConfig{})
		if err != nil {
			t.Fatalf("%s does not decode: %v", of, err)
		}
		tb, err := payload.Decode(record.ToMessage(b), time.Now(), payload.DecodeConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if ta.ID != tb.ID || ta.ExecAt != tb.ExecAt {
			t.Errorf("%s: the two replays are tasks %d at %d and %d at %d", of, ta.ID, ta.ExecAt, tb.ID, tb.ExecAt)
		}
		if header(orig, payload.HeaderID) == "" && ta.Name != src {
			t.Errorf("%s: name %q, want the original input position %q", of, ta.Name, src)
		}
		if want := header(orig, "trace"); header(a, "trace") != want || string(a.Value) != string(orig.Value) {
			t.Errorf("%s: not the original: %v", of, a)
		}
		if header(a, payload.HeaderError) != "" || header(a, failed.HeaderSourceTopic) != "" {
			t.Errorf("%s: failure headers kept: %v", of, a.Headers)
		}
	}

	// The cause is fixed: ingest allows every topic now. The sixteen copies
	// are eight tasks, none fails.
	stop = runIngest(nil)
	waitFor(t, ctx, "the replayed tasks stored", func() bool { return store.Len() >= refused+1 })
	time.Sleep(2 * time.Second) // a late second copy would be a row too
	stop()
	if store.Len() != refused+1 || ix.distinct() != refused+1 {
		t.Errorf("%d rows and %d index entries, want %d each", store.Len(), ix.distinct(), refused+1)
	}
	if n := count(failed.Filter{From: notAllowed.From, To: time.Now().Add(time.Second)}); n != refused+1 {
		t.Errorf("%d failed messages after the replays, want the %d from before", n, refused+1)
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// partitionEnd is one partition's high-water mark.
type partitionEnd struct {
	topic     string
	partition int
	offset    int64
}

func highWaterMarks(t *testing.T, ctx context.Context, brokers []string, names ...string) []partitionEnd {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	var out []partitionEnd
	for _, name := range names {
		reqs := []kafka.OffsetRequest{kafka.LastOffsetOf(0), kafka.LastOffsetOf(1)} // ownTopics: two partitions
		res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{name: reqs}})
		if err != nil {
			t.Fatal(err)
		}
		for _, po := range res.Topics[name] {
			out = append(out, partitionEnd{name, po.Partition, po.LastOffset})
		}
	}
	slices.SortFunc(out, func(a, b partitionEnd) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return a.partition - b.partition
	})
	return out
}

// readFrom reads every message written to the topics' partitions since
// the given high-water marks.
func readFrom(t *testing.T, ctx context.Context, brokers []string, from []partitionEnd, names ...string) []kafka.Message {
	t.Helper()
	var out []kafka.Message
	for _, end := range highWaterMarks(t, ctx, brokers, names...) {
		var start int64
		for _, f := range from {
			if f.topic == end.topic && f.partition == end.partition {
				start = f.offset
			}
		}
		if end.offset <= start {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: end.topic, Partition: end.partition, MaxWait: 100 * time.Millisecond})
		if err := r.SetOffset(start); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("read %s/%d: %v", end.topic, end.partition, err)
			}
			out = append(out, m)
			if m.Offset >= end.offset-1 {
				break
			}
		}
		r.Close()
	}
	return out
}

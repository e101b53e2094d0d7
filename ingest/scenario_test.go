package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// scenario is one end-to-end run of the ingester against a Kafka cluster,
// a payload store and a zset index, whichever implementations they are.
type scenario struct {
	brokers []string
	store   interface {
		Store
		payload.Store
	}
	ix      *zset.Index
	w       Writer                // writes the failed topic
	input   string                // topic names, unique per run
	slow    string                //
	failed  string                //
	group   string                // consumer group, unique per run
	n       int                   // input messages to produce
	timeout time.Duration         // for everything to be committed
	config  func(*Config)         // optional changes to the ingester config
	logf    func(string, ...any)  // progress
	tb      testing.TB            //
	ctx     context.Context       //
	want    map[int]inputExpected // by message number
}

// inputExpected is what the scenario produced as message i.
type inputExpected struct {
	topic     string
	msg       payload.Message
	kind      string // "task", "derived" (no delay-id), "cancel", "malformed"
	ref       payload.Ref
	cancelled bool // a later (or earlier) cancel names this task
}

// build makes the input messages: 1 in 10 malformed, 1 in 10 a cancel of
// the task just before it, 1 in 10 a task without delay-id, the rest tasks
// with delay-id; delay-at as RFC 3339 and as unix ms, and delay-after, in
// turn; every fourth message on the slow topic.
func (s *scenario) build(t0 time.Time, suffix string) map[string][]payload.Message {
	s.want = map[int]inputExpected{}
	out := map[string][]payload.Message{}
	for i := range s.n {
		topic := s.input
		if i%4 == 3 {
			topic = s.slow
		}
		exec := t0.Add(10*time.Minute + time.Duration(i)*time.Second).Truncate(time.Millisecond)
		name := fmt.Sprintf("task-%s-%d", suffix, i)
		e := inputExpected{topic: topic, kind: "task"}
		h := []payload.Header{{Key: payload.HeaderTopic, Value: []byte("biz-" + suffix)}, {Key: "trace", Value: []byte(strconv.Itoa(i))}}
		switch i % 10 {
		case 9:
			e.kind = "malformed"
			h = []payload.Header{{Key: payload.HeaderTopic, Value: []byte("biz-" + suffix)}, {Key: payload.HeaderAt, Value: []byte("tomorrow")}}
		case 8:
			e.kind = "cancel"
			prev := s.want[i-1]
			prev.cancelled = true
			s.want[i-1] = prev
			h = []payload.Header{
				{Key: payload.HeaderOp, Value: []byte(payload.OpCancel)},
				{Key: payload.HeaderID, Value: []byte(fmt.Sprintf("task-%s-%d", suffix, i-1))},
				{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(prev.ref.ExecAt, 10))},
			}
			e.ref = prev.ref
		case 0:
			e.kind = "derived"
			// Far from the others, so a Scan can find exactly these.
			exec = t0.Add(3*time.Hour + time.Duration(i)*time.Millisecond).Truncate(time.Millisecond)
			h = append(h, payload.Header{Key: payload.HeaderAt, Value: []byte(exec.Format(time.RFC3339Nano))})
			e.ref = payload.Ref{ExecAt: exec.UnixMilli()}
		default:
			h = append(h, payload.Header{Key: payload.HeaderID, Value: []byte(name)})
			switch i % 3 {
			case 0:
				h = append(h, payload.Header{Key: payload.HeaderAt, Value: []byte(exec.Format(time.RFC3339Nano))})
			case 1:
				h = append(h, payload.Header{Key: payload.HeaderAt, Value: []byte(strconv.FormatInt(exec.UnixMilli(), 10))})
			default:
				h = append(h, payload.Header{Key: payload.HeaderAfter, Value: []byte(exec.Sub(t0).String())})
			}
			e.ref = payload.Ref{ID: payload.TaskID(name), ExecAt: exec.UnixMilli()}
		}
		e.msg = payload.Message{
			Topic:   topic,
			Key:     []byte("key-" + strconv.Itoa(i)),
			Value:   []byte(fmt.Sprintf("value %d of %s", i, suffix)),
			Headers: h,
			Time:    t0, // delay-after counts from here
		}
		s.want[i] = e
		out[topic] = append(out[topic], e.msg)
	}
	return out
}

// run produces the input, runs the ingester until both input topics are
// committed to their ends, stops it and checks the stores and the failed topic.
func (s *scenario) run() {
	tb, ctx := s.tb, s.ctx
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	t0 := time.Now().Truncate(time.Millisecond) // Kafka keeps ms timestamps
	msgs := s.build(t0, suffix)

	producer := &kafka.Writer{
		Addr:         kafka.TCP(s.brokers...),
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
	}
	defer producer.Close()
	for _, topic := range []string{s.input, s.slow} {
		produce(tb, ctx, producer, record.FromMessages(msgs[topic]))
	}
	s.logf("produced %d messages", s.n)
	client := &kafka.Client{Addr: kafka.TCP(s.brokers...), Timeout: 5 * time.Second}
	if lag, err := groupLag(ctx, client, s.group, s.input, s.slow); err != nil || lag != int64(s.n) {
		tb.Fatalf("before Run: lag %d, %v; want %d", lag, err, s.n)
	}

	cfg := Config{
		Brokers:   s.brokers,
		GroupID:   s.group,
		Input:     s.input,
		Slow:      s.slow,
		Failed:    s.failed,
		BatchSize: 64,
	}
	if s.config != nil {
		s.config(&cfg)
	}
	in, err := New(cfg, s.store, roles(s.ix), s.w)
	if err != nil {
		tb.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- in.Run(runCtx) }()

	deadline := time.Now().Add(s.timeout)
	for {
		lag, err := groupLag(ctx, client, s.group, s.input, s.slow)
		if err == nil && lag == 0 {
			break
		}
		if time.Now().After(deadline) {
			stop()
			<-done
			tb.Fatalf("input not committed after %v: lag %d, %v", s.timeout, lag, err)
		}
		select {
		case err := <-done:
			tb.Fatalf("Run returned early: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	s.logf("all input committed after %v", time.Since(start))
	stop()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatalf("Run after stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		tb.Fatal("Run did not return after stop")
	}
	s.logf("stopped after %v", time.Since(start))
	if lag, err := groupLag(ctx, client, s.group, s.input, s.slow); err != nil || lag != 0 {
		tb.Errorf("after stop: lag %d, %v", lag, err)
	}

	s.checkStore(ctx)
	s.checkIndex(ctx)
	s.checkFailed(ctx, client)
}

func (s *scenario) checkStore(ctx context.Context) {
	tb := s.tb
	var refs []payload.Ref
	var idx []int
	derived := 0
	for _, i := range slices.Sorted(maps.Keys(s.want)) {
		switch e := s.want[i]; e.kind {
		case "task":
			refs = append(refs, e.ref)
			idx = append(idx, i)
		case "derived":
			derived++
		}
	}
	got, err := s.store.Get(ctx, refs)
	if err != nil {
		tb.Fatalf("store Get: %v", err)
	}
	for j, task := range got {
		e := s.want[idx[j]]
		switch {
		case task == nil:
			tb.Errorf("message %d: no row for %+v", idx[j], e.ref)
		case task.Cancel != e.cancelled:
			tb.Errorf("message %d: Cancel %v, want %v", idx[j], task.Cancel, e.cancelled)
		case !e.cancelled && (string(task.Key) != string(e.msg.Key) || string(task.Value) != string(e.msg.Value) || !strings.HasPrefix(task.Topic, "biz-")):
			tb.Errorf("message %d: stored %q=%q to %s", idx[j], task.Key, task.Value, task.Topic)
		case !e.cancelled && task.Name != fmt.Sprintf("task-%s-%d", strings.TrimPrefix(task.Topic, "biz-"), idx[j]):
			tb.Errorf("message %d: name %q", idx[j], task.Name)
		}
	}

	// Tasks without delay-id: named after their input position.
	first := s.want[0].ref.ExecAt
	var names []string
	err = s.store.Scan(ctx, first, first+int64(s.n), func(task payload.Task) error {
		names = append(names, task.Name)
		return nil
	})
	if err != nil {
		tb.Fatalf("store Scan: %v", err)
	}
	if len(names) != derived {
		tb.Errorf("scan found %d tasks without delay-id, want %d: %v", len(names), derived, names)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, s.input+"/") && !strings.HasPrefix(name, s.slow+"/") {
			tb.Errorf("derived name %q", name)
		}
	}
}

func (s *scenario) checkIndex(ctx context.Context) {
	tb := s.tb
	want := map[zset.Entry]bool{}
	maybe := map[zset.Entry]bool{} // cancelled: forgotten unless the cancel overtook its task
	var until int64
	for _, e := range s.want {
		if e.kind == "task" || e.kind == "derived" {
			until = max(until, e.ref.ExecAt)
		}
		switch {
		case e.kind == "task" && e.cancelled:
			maybe[zset.Entry{ID: e.ref.ID, ExecAt: e.ref.ExecAt}] = true
		case e.kind == "task":
			want[zset.Entry{ID: e.ref.ID, ExecAt: e.ref.ExecAt}] = true
		}
	}
	keys, err := s.ix.Reader().DueKeys(ctx, until)
	if err != nil {
		tb.Fatal(err)
	}
	got := map[zset.Entry]bool{}
	derived := 0
	for _, key := range keys {
		entries, err := s.ix.Reader().Due(ctx, key, until, 5000)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range entries {
			if e.ExecAt >= s.want[0].ref.ExecAt && e.ExecAt < s.want[0].ref.ExecAt+int64(s.n) {
				derived++ // ids of derived names are hashes we do not know
				continue
			}
			got[e] = true
		}
	}
	for e := range want {
		if !got[e] {
			tb.Errorf("index lacks %+v", e)
		}
	}
	for e := range got {
		if !want[e] && !maybe[e] {
			tb.Errorf("index has unexpected %+v", e)
		}
	}
	if wantDerived := s.count("derived"); derived != wantDerived {
		tb.Errorf("index has %d tasks without delay-id, want %d", derived, wantDerived)
	}
}

func (s *scenario) checkFailed(ctx context.Context, client *kafka.Client) {
	tb := s.tb
	msgs := readTopic(tb, ctx, client, s.brokers, s.failed)
	if want := s.count("malformed"); len(msgs) != want {
		tb.Errorf("failed topic holds %d messages, want %d", len(msgs), want)
	}
	byKey := map[string]inputExpected{}
	for _, e := range s.want {
		byKey[string(e.msg.Key)] = e
	}
	for _, m := range msgs {
		e, ok := byKey[string(m.Key)]
		if !ok || e.kind != "malformed" {
			tb.Errorf("failed topic: unexpected key %q", m.Key)
			continue
		}
		if string(m.Value) != string(e.msg.Value) {
			tb.Errorf("failed %q: value %q, want %q", m.Key, m.Value, e.msg.Value)
		}
		if v, _ := header(m, payload.HeaderError); !strings.Contains(v, "delay-at") {
			tb.Errorf("failed %q: delay-error %q", m.Key, v)
		}
		if v, _ := header(m, payload.HeaderAt); v != "tomorrow" {
			tb.Errorf("failed %q: original delay-at %q", m.Key, v)
		}
		if v, _ := header(m, HeaderSourceTopic); v != e.topic {
			tb.Errorf("failed %q: source topic %q, want %q", m.Key, v, e.topic)
		}
		if v, _ := header(m, HeaderSourceOffset); v == "" {
			tb.Errorf("failed %q: no source offset", m.Key)
		}
	}
}

func (s *scenario) count(kind string) int {
	n := 0
	for _, e := range s.want {
		if e.kind == kind {
			n++
		}
	}
	return n
}

// groupLag is how many messages of topics the group has not committed.
func groupLag(ctx context.Context, client *kafka.Client, group string, topics ...string) (int64, error) {
	parts := map[string][]int{}
	var reqs []kafka.OffsetRequest
	ends := map[string][]kafka.OffsetRequest{}
	for _, topic := range topics {
		ps, err := partitions(ctx, client, topic)
		if err != nil {
			return -1, err
		}
		parts[topic] = ps
		reqs = reqs[:0]
		for _, p := range ps {
			reqs = append(reqs, kafka.LastOffsetOf(p))
		}
		ends[topic] = slices.Clone(reqs)
	}
	lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: ends})
	if err != nil {
		return -1, err
	}
	of, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return -1, err
	}
	switch {
	case errors.Is(of.Error, kafka.GroupIdNotFound): // kfake, before the first join: nothing committed
		of.Topics = nil
	case of.Error != nil:
		return -1, of.Error
	}
	var lag int64
	for topic, ps := range lo.Topics {
		committed := map[int]int64{}
		for _, p := range of.Topics[topic] {
			if p.Error != nil {
				return -1, p.Error
			}
			committed[p.Partition] = p.CommittedOffset
		}
		for _, p := range ps {
			if p.Error != nil {
				return -1, p.Error
			}
			c := max(committed[p.Partition], 0) // -1: nothing committed yet
			lag += p.LastOffset - c
		}
	}
	return lag, nil
}

func partitions(ctx context.Context, client *kafka.Client, topic string) ([]int, error) {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, err
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		return nil, fmt.Errorf("metadata of %s: %+v", topic, md.Topics)
	}
	var ps []int
	for _, p := range md.Topics[0].Partitions {
		ps = append(ps, p.ID)
	}
	return ps, nil
}

// readTopic reads every message of topic, partition by partition.
func readTopic(tb testing.TB, ctx context.Context, client *kafka.Client, brokers []string, topic string) []payload.Message {
	tb.Helper()
	ps, err := partitions(ctx, client, topic)
	if err != nil {
		tb.Fatal(err)
	}
	var out []payload.Message
	for _, p := range ps {
		lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(p)}}})
		if err != nil {
			tb.Fatal(err)
		}
		end := lo.Topics[topic][0].LastOffset
		if end == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p, MaxWait: 100 * time.Millisecond})
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		for {
			m, err := r.ReadMessage(rctx)
			if err != nil {
				tb.Fatalf("read %s/%d: %v", topic, p, errors.Join(err, r.Close()))
			}
			out = append(out, record.ToMessage(m))
			if m.Offset >= end-1 {
				break
			}
		}
		cancel()
		r.Close()
	}
	return out
}

// produce writes msgs, retrying the ones that failed while a new topic's
// metadata spreads (UnknownTopicOrPartition, LeaderNotAvailable).
func produce(tb testing.TB, ctx context.Context, w *kafka.Writer, msgs []kafka.Message) {
	tb.Helper()
	for attempt := 1; len(msgs) > 0; attempt++ {
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			return
		}
		if attempt == 60 {
			tb.Fatalf("produce %d messages: %v", len(msgs), err)
		}
		var werrs kafka.WriteErrors
		if errors.As(err, &werrs) && len(werrs) == len(msgs) {
			var again []kafka.Message
			for i, e := range werrs {
				if e != nil {
					again = append(again, msgs[i])
				}
			}
			msgs = again
		}
		time.Sleep(250 * time.Millisecond)
	}
}

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/committed/txntest"
	"github.com/delayq/delayq/topics"
)

// TestTransactionalProducer: a transactional producer (Kafka Streams, a
// Flink exactly-once sink) writes tasks to delay-input interleaved with
// plain ones (txntest.Write): a committed transaction, an aborted one,
// and one left open until the broker aborts it by its timeout. Every plain
// and committed task is delivered once, none of the aborted ones, nothing
// goes to delay-failed (no transaction marker either), and a cancel
// written after the open transaction began still wins over its task on
// another partition, due before the broker aborts it: the cancel hold
// waits for the transaction to end, and no longer.
func TestTransactionalProducer(t *testing.T) {
	e := newEnv(t)
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	e.Start("d0")
	runTransactional(t, e, topic, out, failed)
}

// TestEmbeddedTransactionalProducer is TestTransactionalProducer in
// embedded mode: kfake does transactions and read-committed fetches.
func TestEmbeddedTransactionalProducer(t *testing.T) {
	e := embeddedEnv(t)
	topic := e.Topic("orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	e2etest.WaitFor(t, 30*time.Second, "delay-input to exist", func() bool {
		return admin.Ensure(context.Background(), e.Brokers, nil, []admin.Spec{{Name: topics.Input}}) == nil
	})
	runTransactional(t, e, topic, out, failed)
}

func runTransactional(t *testing.T, e *e2etest.Env, topic string, out, failed *e2etest.Collector) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l := e2etest.NewLedger()
	plain := kgoClient(t, e.Brokers)

	// Ingest runs and publishes its watermarks before the scenario: a
	// partition without one holds nothing back (a fresh start is not what
	// this test is about).
	warm := e.Seq("warm-up")
	l.Either[warm] = true
	for p := range int32(2) {
		produceRecord(t, ctx, plain, p, e2etest.TaskMessage(topic, warm, fmt.Sprint(warm, p), time.Now(), time.Now(), 1))
	}
	e2etest.WaitFor(t, 60*time.Second, "the warm-up tasks", func() bool { return out.Len() >= 2 })

	now := time.Now().Truncate(time.Millisecond)
	w := txntest.Write(t, ctx, e.Brokers, topics.Input, 0, e.Run+"/", func(name string) *kgo.Record {
		return record(e2etest.TaskMessage(topic, name, name, now, now.Add(3*time.Second), 1))
	})
	// The task the late cancel must stop, on partition 1, due before the
	// open transaction on partition 0 can be aborted, and its cancel
	// behind that transaction, appended more than the watermark's lead
	// (2 s) before the task is due: timed from here, since writing the
	// transactions takes seconds on a busy machine.
	victim := e.Seq("victim")
	victimAt := time.Now().Truncate(time.Millisecond).Add(3 * time.Second)
	if abort := w.Opened.Add(txntest.OpenTimeout); !victimAt.Before(abort) {
		t.Logf("the victim is due %v after the earliest abort: the hold is not exercised this run", victimAt.Sub(abort))
	}
	produceRecord(t, ctx, plain, 1, e2etest.TaskMessage(topic, victim, victim, now, victimAt, 1))
	l.Cancelled[victim] = true
	cancelSeq := e2etest.CancelSeq(victim)
	produceRecord(t, ctx, plain, 0, e2etest.CancelMessage(topic, victim, victim, victimAt, time.Now()))
	l.Cancels[cancelSeq] = true
	for _, name := range w.Visible {
		l.Due[name] = e2etest.Due{At: now.Add(3 * time.Second), Accepted: time.Now()}
	}
	for _, name := range w.Hidden {
		l.Cancelled[name] = true // aborted: never delivered
	}

	r := awaitDelivery(l, out, 60*time.Second)
	t.Logf("%s: %v", t.Name(), r)
	mustBeClean(t, r)
	if r.Delivered != len(w.Visible) {
		t.Errorf("delivered %d of %d", r.Delivered, len(w.Visible))
	}
	if d := r.Deliveries; len(d) > 0 && d[len(d)-1].At.Sub(now) < txntest.OpenTimeout {
		t.Errorf("the last task (after the open transaction) delivered %v after the start: before the broker could abort it", d[len(d)-1].At.Sub(now))
	}
	for _, g := range failed.Snapshot() {
		t.Errorf("delay-failed got %q (key %x, value %q): %s", e2etest.Header(g.Msg, "seq"), g.Msg.Key, g.Msg.Value,
			e2etest.Header(g.Msg, "delay-error"))
	}
}

// TestCompressedInput: tasks that other clients write in batches
// compressed with each codec Kafka knows are read and delivered once.
func TestCompressedInput(t *testing.T) {
	e := newEnv(t)
	e.Start("d0")
	for _, codec := range []struct {
		name string
		c    kgo.CompressionCodec
	}{{"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()}, {"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}} {
		t.Run(codec.name, func(t *testing.T) {
			topic := e.Topic("orders-" + codec.name)
			out, failed := e.Collect(topic), e.Collect(topics.Failed)
			cl := kgoClient(t, e.Brokers, kgo.ProducerBatchCompression(codec.c), kgo.ProducerLinger(50*time.Millisecond))
			now := time.Now().Truncate(time.Millisecond)
			l := e2etest.NewLedger()
			var rs []*kgo.Record
			for i := range 200 {
				seq := e.Seq(fmt.Sprintf("%s-%d", codec.name, i))
				at := now.Add(2 * time.Second)
				r := record(e2etest.TaskMessage(topic, seq, seq, now, at, i))
				r.Topic, r.Partition = topics.Input, int32(i%2)
				rs = append(rs, r)
				l.Due[seq] = e2etest.Due{At: at}
			}
			if err := cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			r := awaitDelivery(l, out, 60*time.Second)
			t.Logf("%s: %v", codec.name, r)
			mustBeClean(t, r)
			if r.Delivered != len(rs) {
				t.Errorf("delivered %d of %d", r.Delivered, len(rs))
			}
			for _, g := range failed.Snapshot() {
				t.Errorf("delay-failed got %q: %s", e2etest.Header(g.Msg, "seq"), e2etest.Header(g.Msg, "delay-error"))
			}
		})
	}
}

// kgoClient is a franz-go producer on brokers that writes to the
// partition each record names.
func kgoClient(t *testing.T, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceRecord writes m to partition of delay-input with cl.
func produceRecord(t *testing.T, ctx context.Context, cl *kgo.Client, partition int32, m kafka.Message) {
	t.Helper()
	r := record(m)
	r.Topic, r.Partition = topics.Input, partition
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// record turns a kafka-go input message into a kgo record.
func record(m kafka.Message) *kgo.Record {
	r := &kgo.Record{Key: m.Key, Value: m.Value, Timestamp: m.Time}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return r
}

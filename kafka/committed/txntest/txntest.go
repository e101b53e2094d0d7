// Package txntest writes what a transactional producer (Kafka Streams, a
// Flink exactly-once sink) leaves in a partition, with franz-go's kgo:
// plain records interleaved with a committed transaction, an aborted one,
// and one left open until the broker aborts it by its timeout. Tests of
// read-committed consumers (package committed, ingest, the pipeline) use
// it against kfake and the real Kafka.
package txntest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// OpenTimeout is the transaction timeout of the transaction Write leaves
// open: Kafka aborts it that long after it began, plus up to
// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s by
// default).
const OpenTimeout = 5 * time.Second

// Written says what Write wrote, by name: Visible in the order a
// read-committed consumer gets them, Hidden never.
type Written struct {
	Visible []string
	Hidden  []string
	// AfterOpen are the names of Visible written after the open
	// transaction began: held back until the broker aborts it.
	AfterOpen []string
	// Opened is when the open transaction began: the broker aborts it
	// OpenTimeout after it, or later.
	Opened time.Time
}

// Write writes to partition of topic on brokers, with record(name) making
// each record (Topic and Partition are set here):
//
//	plain p1; txn A {a1, plain p2 in between, a2} committed;
//	txn B {b1, b2} aborted; plain p3; txn C {c1} left open; plain p4
//
// prefix starts every name. The open transaction's client is closed when
// the test ends. Write returns once all is written; the broker aborts C
// about OpenTimeout later.
func Write(t testing.TB, ctx context.Context, brokers []string, topic string, partition int32, prefix string,
	record func(name string) *kgo.Record) Written {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	plain := newClient(t, opts...)
	txn := newClient(t, append(opts[:2:2], kgo.TransactionalID(prefix+"txn"))...)
	open := newClient(t, append(opts[:2:2], kgo.TransactionalID(prefix+"open"), kgo.TransactionTimeout(OpenTimeout))...)

	produce := func(cl *kgo.Client, name string) {
		t.Helper()
		r := record(prefix + name)
		r.Topic, r.Partition = topic, partition
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", name, err)
		}
	}
	transaction := func(cl *kgo.Client, commit bool, body func()) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		body()
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	produce(plain, "p1")
	transaction(txn, true, func() { produce(txn, "a1"); produce(plain, "p2"); produce(txn, "a2") })
	transaction(txn, false, func() { produce(txn, "b1"); produce(txn, "b2") })
	produce(plain, "p3")
	opened := time.Now()
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(open, "c1")
	produce(plain, "p4")
	names := func(ns ...string) []string {
		for i := range ns {
			ns[i] = prefix + ns[i]
		}
		return ns
	}
	// In offset order; p2 shows only once A is committed.
	return Written{Visible: names("p1", "a1", "p2", "a2", "p3", "p4"), Hidden: names("b1", "b2", "c1"), AfterOpen: names("p4"), Opened: opened}
}

func newClient(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(fmt.Errorf("txntest: %w", err))
	}
	t.Cleanup(cl.Close)
	return cl
}

package delayq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/kafka/kafkaauth"
)

// A task due in ten minutes, delivered to the business topic "orders" with
// its key, value and headers. The example runs against franz-go's in-process
// Kafka (kfake) and prints what delayd reads from delay-input.
func Example() {
	brokers, stop := fakeKafka()
	defer stop()

	c, err := delayq.New(delayq.Config{Brokers: brokers, Node: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	r, err := c.Submit(ctx, delayq.Task{
		ID:      "order-42-reminder",
		Topic:   "orders",
		After:   10 * time.Minute,
		Key:     []byte("order-42"),
		Value:   []byte(`{"remind":"pay"}`),
		Headers: []kafka.Header{{Key: "trace", Value: []byte("t-1")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("id:", r.ID)
	fmt.Println("input:", r.Input)
	fmt.Println("due in:", time.Until(r.At).Round(time.Minute))

	printMessage(readOne(brokers, r.Input), r.At)
	// Output:
	// id: order-42-reminder
	// input: delay-input
	// due in: 10m0s
	// key=order-42 value={"remind":"pay"}
	//   trace: t-1
	//   delay-topic: orders
	//   delay-at: the due time in unix ms
	//   delay-id: order-42-reminder
}

// Without an ID the client makes a snowflake id from its node id; a task due
// more than an hour from now (Config.SlowAfter) goes to delay-input-slow.
func ExampleClient_Submit() {
	brokers, stop := fakeKafka()
	defer stop()

	c, err := delayq.New(delayq.Config{Brokers: brokers, Node: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	r, err := c.Submit(context.Background(), delayq.Task{
		Topic: "invoices",
		At:    time.Now().Add(72 * time.Hour),
		Value: []byte("send invoice 7"),
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = strconv.ParseUint(r.ID, 10, 64)
	fmt.Println("snowflake id:", err == nil)
	fmt.Println("input:", r.Input)
	// Output:
	// snowflake id: true
	// input: delay-input-slow
}

// Cancel takes the id and due time of the task, the pair a Receipt holds. A
// cancel wins whichever of the two messages delayd reads first.
func ExampleClient_Cancel() {
	brokers, stop := fakeKafka()
	defer stop()

	c, err := delayq.New(delayq.Config{Brokers: brokers, Node: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	r, err := c.Submit(ctx, delayq.Task{ID: "job-9", Topic: "jobs", After: 5 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Cancel(ctx, r.ID, r.At); err != nil {
		log.Fatal(err)
	}
	msgs := read(brokers, "delay-input", 2)
	printMessage(msgs[1], r.At)
	// Output:
	// key=job-9 value=
	//   delay-op: cancel
	//   delay-id: job-9
	//   delay-at: the due time in unix ms
}

// A Kafka that wants SASL/SCRAM-SHA-512 (and, as usual with SASL, TLS: set
// Config.TLS, for example to &tls.Config{RootCAs: pool} with the CA that
// signed the brokers' certificates). Take the password from your secret
// store or the environment, never from the command line.
func Example_secured() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "delay-input", "delay-input-slow"),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "delayq", "s3cret"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	for _, password := range []string{"wrong", "s3cret"} {
		mech, err := scram.Mechanism(scram.SHA512, "delayq", password)
		if err != nil {
			log.Fatal(err)
		}
		c, err := delayq.New(delayq.Config{Brokers: cluster.ListenAddrs(), SASL: mech, Node: 4})
		if err != nil {
			log.Fatal(err)
		}
		_, err = c.Submit(context.Background(), delayq.Task{Topic: "orders", After: time.Minute, Value: []byte("hi")})
		var authErr *kafkaauth.Error
		fmt.Printf("password %q: submitted %v, login refused %v\n", password, err == nil, errors.As(err, &authErr))
		c.Close()
	}
	// Output:
	// password "wrong": submitted false, login refused true
	// password "s3cret": submitted true, login refused false
}

// fakeKafka starts an in-process Kafka holding delayq's input topics with
// one partition each.
func fakeKafka() (brokers []string, stop func()) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(1, "delay-input", "delay-input-slow"))
	if err != nil {
		log.Fatal(err)
	}
	return cluster.ListenAddrs(), cluster.Close
}

// read returns the first n messages of partition 0 of topic.
func read(brokers []string, topic string, n int) []kafka.Message {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var msgs []kafka.Message
	for len(msgs) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			log.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func readOne(brokers []string, topic string) kafka.Message { return read(brokers, topic, 1)[0] }

// printMessage prints key, value and headers; a delay-at equal to at
// prints as a fixed phrase so that the output does not depend on the clock.
func printMessage(m kafka.Message, at time.Time) {
	fmt.Printf("key=%s value=%s\n", m.Key, m.Value)
	for _, h := range m.Headers {
		v := string(h.Value)
		if h.Key == "delay-at" && v == strconv.FormatInt(at.UnixMilli(), 10) {
			v = "the due time in unix ms"
		}
		fmt.Printf("  %s: %s\n", h.Key, v)
	}
}

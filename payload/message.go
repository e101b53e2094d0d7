package payload

import "time"

// Header is one header of a message: its key and its value, byte for byte
// (a nil value stays nil, apart from an empty one).
type Header struct {
	Key   string
	Value []byte
}

// Message is a Kafka record as delayq sees it: what Decode reads from the
// input topic, what Deliverable writes to a business topic. It is delayq's
// own, so that no stage's rules depend on a Kafka client; package
// kafka/record converts it from and to kafka-go's where a stage meets a
// reader or a writer.
type Message struct {
	Topic     string    // the topic read from, or to write to
	Partition int       // the partition read from (ignored on write)
	Offset    int64     // the offset read at (ignored on write)
	Key       []byte    // nil stays nil
	Value     []byte    // nil stays nil
	Headers   []Header  // in order; a key may repeat
	Time      time.Time // the record timestamp; zero on write: the writer's clock
}

// Package producer builds the kafka-go Writer every delayq role uses.
//
// New returns a Writer that waits for all in-sync replicas (RequireAll;
// kafka-go's default is no acknowledgement at all), flushes a batch after
// 5 ms (kafka-go's default of 1 s stalls every synchronous write of a few
// messages), routes every message by a hash of its key (one key, one
// partition, as long as the partition count stays) and has no Topic of its
// own: every message names its topic. It asks the brokers for partition
// leaders every second (kafkaauth.MetadataTTL; kafka-go's 6 s meant 6 s of failed
// writes after a leader moved). The partition count of a topic, which
// the writer asks for with every message, is answered from a per-topic
// cache of the same age (partitions.go). One writer serves all topics of a
// process; it is safe for concurrent use and runs its own goroutines until
// Close.
//
// Split (NewSplit) pairs two such writers on one transport for a process
// whose calls range from one message to thousands (delayd's roles): small
// calls go through a writer with small batches, because kafka-go
// allocates room for a whole batch with every partition batch it opens
// (BenchmarkSmallWrites: 10 messages over 8 partitions allocate 1.28 MB a
// call with batches of 1,000, 0.12 MB through a Split).
//
// kafka-go keeps producing a batch after WriteMessages returned ctx.Err():
// a caller that must know whether its messages went out never cuts a write
// short with its context (see scanner).
package producer

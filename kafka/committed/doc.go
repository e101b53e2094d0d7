// Package committed reads one partition of a topic the way Kafka's own
// consumer does with isolation.level=read_committed: only records of
// committed transactions and records written outside any transaction,
// never a record of an aborted transaction nor a transaction marker.
//
// kafka-go's Reader cannot: with IsolationLevel ReadCommitted the broker
// stops its fetches at the last stable offset (an open transaction holds
// back what follows it), but kafka-go hands out the records of aborted
// transactions, which the client must drop with the fetch response's
// aborted-transaction list, and the transaction markers (control
// batches) as messages of their own (segmentio/kafka-go#1332). Both come
// from any transactional producer, such as Kafka Streams or a Flink
// exactly-once sink writing to delay-input.
//
// A Reader sends kafka-go's Fetch requests itself (its protocol package,
// through the transport of a kafkaauth.Auth) and filters as the Java
// client's CompletedFetch does: per fetch, the aborted transactions are
// taken in order of their first offset; a transactional batch of a
// producer with an aborted transaction that started at or before it is
// dropped, until that producer's abort marker; control batches are
// dropped. Dropped records still move the position. That rule is aborts
// (aborts.go), pure and table-tested; filter only reads the records.
//
// # Goroutines
//
// One per Reader, started by the first FetchMessage: it fetches the next
// response while the caller handles the current one, and ends on Close.
// A fetch error is handed to the caller once (FetchMessage returns it)
// and retried after a pause; the Reader never gives up by itself.
package committed

// Package payload is the task model of delayq and everything that touches a
// task's bytes: the wire codec for input messages (Decode), the output message
// (Deliverable), the HBase rowkey, the Store interface and Memory, the
// in-process store of the embedded mode and tests. The HBase store lives in
// payload/hbase, so that importing the task model (the Go client does) costs
// no HBase, ZooKeeper or Prometheus dependency.
//
// Messages are delayq's own (Message, Header): Decode reads one, Deliverable
// makes one, and Task.Headers are Headers. payload imports no Kafka client;
// package kafka/record converts from and to kafka-go's where a stage meets
// a reader or a writer (docs' TestDomainFreeOfKafkaGo keeps it so).
//
// See docs/ARCHITECTURE.md for where payloads sit in the flow.
//
// # Task identity
//
// Every task has a string name and a 63-bit id (at most MaxID = 2^63-1).
// The name is the producer's delay-id header, or, without one,
// DerivedName(input topic, partition, offset), so that re-reading the same
// input after a crash writes the same task again. TaskID maps a name to its
// id: a canonical decimal up to MaxID (what the Go client's snowflake ids
// look like) is that number; any other string, a larger decimal included,
// is its 64-bit FNV-1a hash with the top bit cleared. Ids stay below 2^63
// because Redis's listpack stores a zset member as an 8-byte integer only
// when it fits an int64; a larger id would cost a 20-character string
// (about 30 instead of 20 bytes a member). Redis holds only Ref{ID,
// ExecAt}; the row it points at holds the name, so the output's delay-id
// header is the original string.
//
// # Rowkey (17 bytes)
//
//	byte  0       salt: FNV-1a-64 of bytes 1..16, modulo the table's salt count
//	bytes 1..8    exec_at: unix milliseconds, uint64 big-endian (always >= 0)
//	bytes 9..16   id: uint64 big-endian
//
// Byte for byte, for salts S (1 <= S <= 256):
//
//	h = 14695981039346656037            // FNV-1a 64-bit offset basis
//	for each byte b of key[1:17]:       // exec_at BE then id BE
//	    h = (h XOR b) * 1099511628211   // FNV-1a 64-bit prime, mod 2^64
//	key[0] = h mod S
//
// The salt spreads writes over the table's S pre-split regions (split keys
// 0x01 .. S-1, one byte each, see SplitKeys); exec_at right after it keeps
// rows that are due together in the same blocks of each region. Rows of one
// salt sort by (exec_at, id), so the rows with from <= exec_at < to are, in
// each salt s, exactly the range [s|from|0^8, s|to|0^8). The salt count is
// part of the data: a table written with S salts must always be read with S.
//
// # Id rows (10 bytes)
//
// Cancel by id alone and reschedule need the due time of a task from its
// name: each name has an id row in the same table, IDRowKey = salt | 0x80 |
// id (8 bytes BE), salt = FNV-1a-64 of bytes 1..9 modulo S. Byte 1 of a
// task row is exec_at's high byte, at most 0x7f, so id rows sort after all
// task rows of their salt and never fall in an exec_at range. IDStore
// writes and reads them (IDState: the latest submit's due time, the
// current due time after a move, the latest reschedule's target, the
// cancel-by-id flag); State answers pending / cancelled /
// delivered-or-expired / unknown for a name from its id row and its task
// row. The protocol that keeps them right in any arrival order is
// ingest's ("Ops by id").
//
// # Goroutines
//
// Decode, RowKey and the other codec functions are pure. Memory is safe for
// concurrent use and starts no goroutines.
//
// # Invariants
//
//   - After Decode, Task.Name != "" and Task.ID == TaskID(Task.Name) <= MaxID.
//   - After Decode, ExecAt > 0 (0 for a cancel by id alone,
//     Control = ControlCancelID) and at most MaxDelay after now: a delay-at
//     before MinDueTime, 1973-03-03 ("0", "1970-01-01T00:00:00Z", or unix
//     seconds such as 1795829478, which the reason names as seconds) is
//     refused, never read as "due now", and delay-after counts
//     from the record timestamp, so a record without one (kafka-go sends 0
//     for a zero Message.Time) is refused with "delay-after needs a record
//     timestamp (producer sent none); set one or use delay-at". Re-reading a
//     record therefore always yields the same (ID, ExecAt): one task.
//   - Every Decode error wraps ErrContract and reads as its reason.
//   - ExecAt >= 0 in a rowkey; RowKey(s, r) sorts after RowKey(s, r') when
//     r.ExecAt > r'.ExecAt within one salt.
//   - ParseRowKey(RowKey(s, r)) == r for every s and r.
//   - Task.Headers never holds a delay-* control header (delay-topic,
//     delay-at, delay-after, delay-id, delay-op, delay-error). The
//     recurrence headers (delay-every, delay-cron, delay-tz, delay-until,
//     delay-count) do stay in it, checked, followed by delay-occurrence:
//     they are the series' state in the row (recur.go, Series).
//   - NextOccurrence is a pure function of the task it is given: planning
//     one occurrence twice yields one next task (same ID and ExecAt).
//   - Store.Get returns one entry per ref, in order; nil means no row.
package payload

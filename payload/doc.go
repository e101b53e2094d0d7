// Package payload is the task model of delayq and everything that touches a
// task's bytes: the wire codec for input messages (Decode), the output message
// (Deliverable), the HBase rowkey, and the stores that keep payloads until
// they are due (HBase in production, Memory for embedded mode and tests).
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
// # HBase columns
//
// One column family "d", VERSIONS 1, no family TTL. Qualifiers:
//
//	d:t  business topic (string)                         task put
//	d:n  name: the original delay-id string, or derived  task put
//	d:k  key, byte for byte; absent when the key is nil  task put
//	d:v  value, byte for byte; absent when nil           task put
//	d:h  pass-through headers; absent when none          task put
//	d:c  cancel marker; its value is the task's name     cancel put
//
// d:h holds uvarint(count) and then per header uvarint(len(key)), key,
// uvarint(len(value)+1), value — a length of 0 there means a nil value, so
// nil and empty values both survive the round trip.
//
// A task put writes d:t, d:n and those of d:k, d:v, d:h that are present; a
// cancel put writes only d:c. Because they never share a column, a cancel
// wins in either arrival order: a later task put cannot clear the marker, and
// a row with d:c reads back with Cancel=true. Re-putting the same task
// overwrites the same cells (VERSIONS 1), so a put is idempotent.
//
// # Expiry
//
// Every cell carries a cell TTL (hrpc.TTL) of max(exec_at − now, 0) +
// Retention (default 7 days), capped at 100 years, so no row outlives the later of its exec_at and
// its write time by more than the retention window, which is also how far
// back a backfill Scan can reach. A task whose exec_at is already past when it
// is written is due at once and keeps the full retention window.
//
// # Goroutines
//
// Decode, RowKey and the other codec functions are pure. Memory is safe for
// concurrent use and starts no goroutines. HBase is safe for concurrent use;
// its gohbase client runs one goroutine per region server connection until
// Close. Put and Get send their chunks with a few SendBatch calls in flight
// and return only when all have ended; Scan holds one gohbase scanner per
// salt (with lease renewal) and closes them all before it returns.
//
// # Invariants
//
//   - After Decode, Task.Name != "" and Task.ID == TaskID(Task.Name) <= MaxID.
//   - ExecAt >= 0; RowKey(s, r) sorts after RowKey(s, r') when r.ExecAt >
//     r'.ExecAt within one salt.
//   - ParseRowKey(RowKey(s, r)) == r for every s and r.
//   - Task.Headers never holds a delay-* control header (delay-topic,
//     delay-at, delay-after, delay-id, delay-op, delay-error).
//   - Store.Get returns one entry per ref, in order; nil means no row.
package payload

// Package hbase is delayq's production payload store: Store keeps every
// task in one row of a pre-split HBase table under the salted rowkey of
// package payload, and CreateTable creates that table.
//
// # Table
//
// CreateTable creates the table pre-split into one region per salt (split
// keys {1}..{salts-1}, see payload.SplitKeys), with the family below and
// the table attribute
//
//	delayq.salts = <salt count, decimal>      (SaltsAttribute)
//
// in the table descriptor (the HBase shell shows it under METADATA). The
// salt count is part of every rowkey: a process configured with another
// count would write rows no reader finds and miss every row already there.
// So CreateTable, which every delayd runs at start, checks an existing
// table instead of ignoring it and returns an error wrapping
// ErrSaltsMismatch, naming both counts. A table made before the attribute
// existed gets its count from its regions: the one-byte start keys of the
// pre-split ({1}..{k} means k+1 salts; HBase's own later splits are at
// 17-byte row keys). A different count is a mismatch; the same count, or
// regions that do not show one (merged, or split otherwise), is accepted and
// recorded with a ModifyTable, which reopens the table's regions once.
//
// gohbase can set table attributes at creation but has no call to read a
// descriptor or modify a table; GetTableDescriptors and ModifyTable are
// sent as master calls of this package's own (masterCall) through the admin
// client's SendRPC. A metadata row was the alternative, but it is not atomic
// with the creation (two instances starting at once) and takes a rowkey
// outside every salt's range.
//
// # HBase columns
//
// One column family "d", VERSIONS 1, no family TTL. Qualifiers of a task
// row:
//
//	d:e  the task: a versioned envelope (below)          task put
//	d:c  cancel marker; its value is the task's name     cancel put
//	d:p  present (0x01) when the task was submitted with  task put
//	     a due time already past (payload.Task.PastDue)
//
// d:e is payload.AppendEnvelope: a version byte (1), then uvarint-length
// prefixed topic and name, the key as uvarint(len+1) (0 for nil), the
// headers as uvarint(count) and per header uvarint(len(key)) key
// uvarint(len(value)+1) value, and last the value as uvarint(len+1). So nil
// and empty keys, values and header values all survive the round trip. A
// reader that meets an unknown version fails the row with an error wrapping
// payload.ErrEnvelope instead of guessing; a new version gets a new first
// byte, and readers learn it before writers write it.
//
// One cell instead of one per field: HBase stores every cell with its full
// key (lengths, the 17-byte rowkey, family, qualifier, timestamp, type:
// about 40 bytes) and its TTL tag, so a task with key, value and headers
// used to cost five such keys in the memstore, the WAL, the HFile blocks and every Get
// and Scan response; now it costs one.
//
// A task put writes only d:e; a cancel put writes only d:c. Because they
// never share a column, a cancel wins in either arrival order: a later task
// put cannot clear the marker, and a row with d:c reads back with
// Cancel=true. Re-putting the same task overwrites the same cell
// (VERSIONS 1), so a put is idempotent.
//
// # Compatibility with the layout before d:e
//
// Rows written before d:e held the task in up to five cells:
//
//	d:t  business topic (string)
//	d:n  name: the original delay-id string, or derived
//	d:k  key, byte for byte; absent when the key is nil
//	d:v  value, byte for byte; absent when nil
//	d:h  pass-through headers (payload.EncodeHeaders); absent when none
//
// Get and Scan still read them, so no migration is needed: such rows keep
// being delivered (and cancelled, by their d:c, in either order) until they
// expire by their TTL. When a row has both (a task re-put by a new writer
// over an old row), d:e wins and the old cells are ignored until they
// expire. An older delayd cannot read d:e (it would take such a row for
// one holding only a cancel marker), so a rolling upgrade goes in two
// steps: every instance runs the new version with Config.LegacyCells
// (delayd --hbase-legacy-cells), which writes the old cells, then every
// instance restarts without it.
//
// # Id rows (idrow.go)
//
// One row per task name, key payload.IDRowKey: salt | 0x80 | id (10
// bytes). A task row has exec_at's high byte (at most 0x7f) after the salt,
// so id rows sort after all task rows of their salt and no exec_at range
// reaches them. Family d, times as 8-byte big-endian unix ms:
//
//	d:s  due time of the latest submit
//	d:a  current due time after a move (reschedule, next occurrence); beats d:s
//	d:r  the latest reschedule's new time (an 8-byte 0 once cleared)
//	d:x  cancelled by id alone
//
// Rows written before also hold d:n (the task name); nothing read it, and
// it is no longer written (a submit writes one cell, d:s). PutIDs writes
// the given cells of a row in one put; their TTL is that of
// a task cell for the latest time given, and a cancel without a time keeps
// for MaxDelay (delayd --max-delay) + Retention.
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
// Store is safe for concurrent use; its gohbase client runs one goroutine
// per region server connection until Close. Put and Get send their chunks
// (for Get also its filtered scans, one per salt asked for ScanRows rows or
// more) with a few calls in flight and return only when all have ended.
// Gets that arrive while MergedGets reads are in flight wait and are read
// together by one of those reads' goroutines (merge.go; at most
// MergedGets, each ending when no Get waits); a Get whose ctx ends returns
// at once, and a merged read is cancelled when all its Gets have, or by
// Close, which waits for those goroutines before it closes the client. A row that cannot be read as a task fails only the Gets that
// ask for it. Scan holds one gohbase scanner per salt (with lease renewal)
// and closes them all before it returns.
package hbase

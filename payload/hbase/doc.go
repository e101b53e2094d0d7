// Package hbase is delayq's production payload store: Store keeps every
// task in one row of a pre-split HBase table under the salted rowkey of
// package payload, and CreateTable creates that table.
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
// Store is safe for concurrent use; its gohbase client runs one goroutine
// per region server connection until Close. Put and Get send their chunks
// with a few SendBatch calls in flight and return only when all have ended;
// Scan holds one gohbase scanner per salt (with lease renewal) and closes
// them all before it returns.
package hbase

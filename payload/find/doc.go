// Package find lists stored tasks by due time, the way the HTTP API
// (GET /v1/tasks), delayctl list and the console's Tasks page do: a page
// of the rows of the payload store with from <= exec_at < to, in (exec_at,
// id) order, filtered by state, business topic and key prefix, and a
// cursor to the next page.
//
// It reads the payload store, never the Redis index: HBase keeps rows due
// together next to each other in every salt, so a time range is one key
// range per salt (payload.ScanRange), merged in order by the store's
// ScanFrom. The memory store of embedded mode answers the same calls.
//
// # States
//
// A row's state is the one payload.State gives a task: cancelled when it
// carries the cancel marker (a cancel, a cancel by id, or the old row of a
// rescheduled task), pending when it is due after now, else
// delivered-or-expired. A pending listing starts at now, whatever From
// says: the rows before are past due.
//
// # Cursor
//
// The cursor is opaque to callers: the rowkey order position (exec_at, id)
// of the next row to read, versioned, base64url. Rows are read in that
// order, so paging to the end returns each row once; a task stored while
// paging shows up only if it sorts after the cursor. A page ends after
// Limit tasks or after MaxExamined rows read (filters that match few rows
// must not read the whole table in one request): a page may then hold
// fewer tasks than asked, or none, and still have a next cursor. Callers
// send the same filters with the cursor.
//
// # Goroutines
//
// None: List works in the caller's goroutine.
package find

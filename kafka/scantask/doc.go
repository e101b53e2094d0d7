// Package scantask is the wire format of a scan task: the message the
// dispatcher writes to delay-scan for every due zset and the scanner
// consumes. It lives apart from both stages so that neither imports the
// other.
//
// A scan task is the JSON value {"zset": KEY, "until": UNIX_MS} of a
// delay-scan message whose Kafka key is the zset key, so one zset is only
// ever scanned by one partition. Until is inclusive.
//
// See docs/ARCHITECTURE.md, "Dispatch and scan".
package scantask

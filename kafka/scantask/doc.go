// Package scantask is the wire format of a scan task: the message the
// dispatcher writes to delay-scan for every due group of zsets and the
// scanner consumes. It lives apart from both stages so that neither imports
// the other.
//
// A scan task is the JSON value {"zset": KEY, "until": UNIX_MS} of a
// delay-scan message whose Kafka key is the zset key, so one zset is only
// ever scanned by one partition. Until is inclusive.
//
// A task may also carry "more": [KEY, ...], further zsets to scan up to the
// same until. The dispatcher puts the zsets of a segment's shard families
// that share a family-0 shard into one task (zset.Reader.DueGroups): "zset"
// is that family-0 zset, always the Kafka key of the group, so every zset
// of the group is still scanned by one partition, and a dense segment costs
// a scan task per family-0 shard, not one per zset. A scanner that predates
// "more" scans "zset" only and leaves the rest in the index.
//
// See docs/ARCHITECTURE.md, "Dispatch and scan".
package scantask

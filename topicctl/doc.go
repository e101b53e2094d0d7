// Package topicctl keeps the operators' controls of business topics in
// Redis, so that every delayd instance obeys them and they survive
// restarts: pause and resume (one topic, or all of them), a delivery rate
// shared by all instances, and a default expiry. It also keeps the tasks
// such a control holds back.
//
// # Keys
//
//	{prefix}:topics:paused   hash  field topic ("*" = all topics) -> "1"
//	{prefix}:topics:rate     hash  field topic -> deliveries per second
//	{prefix}:topics:expire   hash  field topic -> expire-after in ms
//	{prefix}:held            set   topics that may have held tasks
//	{prefix}:held:{topic}    zset  member "<id>@<exec_at>", score exec_at
//	{prefix}:bucket:{topic}  hash  token bucket of the topic's rate
//	{prefix}:lease:{topic}   string the instance releasing the topic
//
// Every command and script touches one key, so Redis Cluster works
// unchanged (the braces are placeholders, not hash tags).
//
// # Held tasks
//
// The scanner delivers a due task of a paused or rate-limited topic into
// the topic's held zset instead of its business topic, and removes its
// entry from the index only after that (zset.Index keeps ids only, so the
// topic is known once the row is read). A held task is still pending: its
// row is where it was, a cancel or reschedule marks that row as for any
// pending task, and the releaser (scanner/release.go) drops it then. One
// instance at a time releases a topic (Lease); it takes tokens from the
// topic's bucket (Take), so the rate holds across all instances, and
// releases lowest exec_at first. A held task is removed from its held
// zset only after it was produced: at least once, like the index.
//
// # Invariants
//
//   - A control is effective everywhere within Config.Refresh: scanners
//     read the controls through Controls, cached that long.
//   - Held sets Add before the registry entry; Release drops a topic from
//     the registry only when its held zset is empty and it looks again
//     after, so no held task is ever left out of the registry.
package topicctl

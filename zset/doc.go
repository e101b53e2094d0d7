// Package zset is delayq's Redis index of pending tasks: ids only, sorted by
// due time, cut into time segments and shards so that every sorted set stays
// small. Payloads live elsewhere (package payload); a Redis member only
// locates its row.
//
// # Keys
//
// A task (id, exec_at) is indexed in the sorted set
//
//	{prefix}:{segment}:{shard}        e.g. delayq:202501311459:17
//
// with member = the id as a decimal string and score = exec_at in unix
// milliseconds (exact in a float64 up to 2^53). The parts are:
//
//   - prefix: Config.Prefix, "delayq" by default. The braces above are
//     placeholders, not Redis Cluster hash tags: keys spread over all slots.
//   - segment: exec_at truncated to Config.Segment (counted from the unix
//     epoch), formatted in UTC as YYYYMMDDHHMM, or YYYYMMDDHHMMSS when the
//     segment length is not a whole number of minutes.
//   - shard: mix64(id) mod Config.Shards, where mix64 is the 64-bit murmur3
//     finalizer. Snowflake ids have structured low bits (sequence, node), so
//     id mod shards would spread them badly.
//
// The registry {prefix}:segments is one sorted set with member = segment
// string and score = segment start (unix ms). It lists every segment that
// may hold members. Readers find zsets through the registry and never use
// KEYS or SCAN.
//
// # Invariants
//
//   - Add writes the registry entry of a segment before (in the same
//     pipeline as) the members of that segment, so a segment with members is
//     registered. Add re-registers on every call, which heals a segment that
//     was retired concurrently.
//   - A task whose segment has already ended (segment end <= now) lands in
//     the segment of now instead, with its score still its exec_at. The
//     dispatcher therefore never needs to look at a segment after it ended
//     and was drained: overdue tasks are always in a scanned zset. The
//     consequence: an entry lives in its own segment or in a later one
//     (Pending checks both).
//   - Retire removes a segment from the registry only when the segment ended
//     before the given time and all its shards are empty. Since Add never
//     writes into an ended segment, a grace period longer than the clock skew
//     between processes makes this race free.
//   - Every command touches a single key (pipelines are fine), so Redis
//     Cluster works unchanged, and no command carries more than MaxArgs
//     arguments (Redis and Lua choke on very long argument lists).
//   - Same id + same exec_at added twice is one member (ZADD is idempotent).
//     Remove deletes exactly the members given (ZREM), so a duplicate scan
//     removes nothing it did not read.
//
// # Memory
//
// A sorted set with at most zset-max-listpack-entries members (default 128)
// is a listpack: a member that fits an int64 is stored as an integer (task
// ids are 63-bit, see payload.TaskID), so a member and its score (exec_at,
// also an integer) take 10 bytes each, about 21 bytes with allocator
// rounding. Past that limit it converts to a skiplist plus dict at about
// 125 bytes per member and never converts back, even when drained. Each key
// also costs about 100 bytes of its own. Segment length and shard count are
// the levers: pending tasks per segment / Shards should stay well under the
// listpack limit. With the defaults (1-minute segments, 256 shards) a
// million tasks due uniformly over an hour are 16.7k per segment, 65 per
// zset on average and under 100 at most: the load tool measured 23.5 bytes
// of used_memory per pending task, every zset a listpack (64 shards: 137
// bytes, every zset a skiplist). Denser backlogs (more than about 1.3M tasks
// due within an hour, evenly) want more shards or shorter segments.
//
// # Costs
//
// DueKeys issues one ZCOUNT per shard of every registered segment that has
// started, which is normally the current segment and perhaps one or two
// undrained ones. Backlog and Retire issue one ZCARD per shard of every
// segment they look at; Backlog looks at all registered segments, so with a
// deep future backlog (30 days of 1-minute segments x 256 shards is 11M
// commands) call it sparingly. Commands are sent in pipelines of at most
// MaxPipeline commands.
//
// Index is safe for concurrent use; it starts no goroutines.
package zset

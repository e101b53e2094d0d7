// Package zset is delayq's Redis index of pending tasks: ids only, sorted by
// due time, cut into time segments and shards so that every sorted set stays
// small. Payloads live elsewhere (package payload); a Redis member only
// locates its row.
//
// # Roles
//
// New returns an Index: the client, the key layout and the metrics. It
// hands out one type per role, and each part of delayq takes only the
// roles it uses:
//
//   - Writer (writer.go, family.go, forget.go): Add, Forget (ingest: the
//     entries of rows it marked cancelled, wherever Add put them). Ingest; the scanner for the next
//     occurrences of recurring tasks.
//   - Reader (reader.go): DueKeys, DueGroups, Due, DueMany, Remove,
//     RemoveMany, Earliest. The dispatcher lists the due zsets, the
//     scanner reads them and removes what it settled; its releaser of
//     held tasks asks Earliest how far due order allows it to go.
//   - Maintenance (maintenance.go): Retire, Backlog, Pending. The
//     dispatcher retires segments and counts the backlog; the console and
//     delayctl count it and inspect tasks.
//   - OpFlags (ops.go): FlagOps, Flagged. Ingest.
//   - Watermarks (marks.go): SetMarks (ingest), Marks (the scanner's
//     watermark follower).
//
// Every role answers Key and Registry (keys.go). The roles share the
// pipelined script calls (pipeline.go).
//
// # Keys
//
// A task (id, exec_at) is indexed in the sorted set
//
//	{prefix}:{segment}:{shard}        e.g. delayq:202501311459:17
//
// with a score that stands for exec_at and one of two members. The score
// (layout version 2) is exec_at in unix milliseconds as an offset from the
// middle of the zset's segment, plus one from the middle on (so no score
// is 0, which ZMSCORE answers for a missing member): with one-minute
// segments a segment's own tasks score from -30,000 to 30,000, integers a
// listpack stores in 2 bytes where an exec_at takes 8. The map is
// increasing, so a range of due times is a range of scores, each zset's
// own (a task that went into a later segment scores below -30,000). Under
// layout version 1 (prefixes recorded before version 2, see Layout) the
// score is exec_at itself. The members:
//
//   - "<id>", the id as a decimal string: the normal form, stored by a
//     listpack as an integer;
//   - "<id>@<score>", e.g. "42@-29000": only when the zset already holds
//     the plain "<id>" of another task (the same id at another exec_at,
//     both due in this zset). Producers choose the delay-id (payload.TaskID
//     maps it to the 63-bit id), so reusing one is allowed, not an error.
//
// Add indexes with ZADD NX, which never changes the score of a member that
// is already there: a task never moves another task that reuses its id.
//
// The key parts are:
//
//   - prefix: Config.Prefix, DefaultPrefix ("delayq") by default. The braces
//     above are placeholders, not Redis Cluster hash tags: keys spread over
//     all slots.
//   - segment: exec_at truncated to Config.Segment (counted from the unix
//     epoch), formatted in UTC as YYYYMMDDHHMM, or YYYYMMDDHHMMSS when the
//     segment length is not a whole number of minutes.
//   - shard: mix64(id) mod Config.Shards, where mix64 is the 64-bit murmur3
//     finalizer. Snowflake ids have structured low bits (sequence, node), so
//     id mod shards would spread them badly. Every task of one id and
//     segment lands in the same zset.
//
// A segment that receives more than about Shards*Fill tasks also uses the
// zsets of further shard families (next section):
//
//	{prefix}:{segment}:{family}.{shard}   e.g. delayq:202501311459:3.700
//
// The registry {prefix}:segments is one sorted set with member = segment
// string and score = segment start (unix ms). It lists every segment that
// may hold members. Readers find zsets through the registry and never use
// KEYS or SCAN. Three hashes go with it: {prefix}:families (field =
// segment, value = shard families in use, only for segments with more than
// one), {prefix}:pending (field = segment, value = members added minus
// members removed, what Backlog reports) and {prefix}:offered (field =
// segment, value = tasks all Adds were given for it, raised before they
// write and never lowered: the bound of the ZADD NX path, see "Costs").
//
// The string {prefix}:layout records what every process of the prefix
// must agree on, e.g. "version=2 segment=1m0s shards=256 zset-fill=127"
// (Layout): LayoutVersion, Config.Segment, Config.Shards and Config.Fill,
// named after delayd's flags. CheckLayout writes it when absent (SET NX:
// the first start, or a Redis that lost its keys) and otherwise refuses a
// different layout with ErrLayoutMismatch, as package payload/hbase refuses
// a table of another salt count.
//
// # Shard families
//
// The number of zsets a segment uses follows how many tasks fall in it, so
// that every zset stays a listpack whatever the distribution of due times.
// Family f of a segment has Shards*(f+1) zsets; a task's shard in family f
// is mix64(id) mod Shards*(f+1), so its path (family 0, 1, 2, ...) depends
// on its id only. A zset takes tasks until it holds Config.Fill members
// (default 127), then seals: it gets the member "~" with score +inf (never
// due, never a task) and takes no new task again, even once drained. Add
// walks each task down its path: in each zset the task is either already
// there (done: the same task added again), or the zset is open (added by
// placeScript, or by ZADD NX while the segment is sparse, see "Costs"), or
// sealed (on to the next family). Zsets the process saw sealed are only
// looked into (ZMSCORE), not written. Family MaxFamilies-1 never seals.
// Before Add writes into family f >= 1 of a segment it raises the
// segment's count in {prefix}:families to f+1, and readers (DueKeys,
// DueGroups, Retire, Pending) list the zsets of every family counted
// there. A uniform hour with the defaults stays in family 0 (the layout
// before families); a million tasks due in one second use
// families 0-7, 9,216 zsets.
//
// # Invariants
//
//   - Add writes the registry entry of a segment before (in the same
//     pipeline as) the members of that segment, so a segment with members is
//     registered. Add re-registers on every call, which heals a segment that
//     was retired concurrently.
//   - Add records family f+1 of a segment in {prefix}:families before it
//     writes a member into family f, so DueKeys lists every zset holding
//     members (a tick that read the count just before it grew lists the new
//     family's zsets at the next tick: scans have an upper bound only).
//   - A sealed zset never takes a new task, and a task's path depends on its
//     id only, so adding a task again finds it wherever it went first,
//     however far the segment has grown since: one task, one member, one
//     zset, whatever the interleaving of Adds (each zset's step is one
//     script) and scans.
//   - ZADD NX (no seal check) writes only into family 0 of a segment that,
//     read in the same Add before it writes, has one family: no task of it
//     is anywhere but family 0 (a second family is recorded before a task
//     goes past family 0), so a plain ZADD NX cannot add a second copy of
//     one. It writes only while the segment's offered count, raised by
//     every Add's whole batch before it writes (so including the batches of
//     Adds running at the same time, in any process), is at most 0.6*Fill
//     tasks a zset: all ZADD NX writes of a segment together stay under
//     that. This keeps its zsets under Fill; one that skewed ids push past
//     it only costs memory (a skiplist past 128), and the first walk that
//     meets it seals it. The bound does not cover a writer that stalls
//     between its first round trip and its ZADD NX while other Adds walk
//     the segment's zsets full (its ZADD NX then lands on a full zset: a
//     skiplist), nor a task sent twice at once through two Adds on either
//     side of the segment's second family (two members, delivered twice):
//     both need one Add to be overtaken by several others.
//   - A task whose segment has already ended (segment end <= now) lands in
//     the segment of now instead, its score that exec_at's there. The
//     dispatcher therefore never needs to look at a segment after it ended
//     and was drained: overdue tasks are always in a scanned zset. The
//     consequence: an entry lives in its own segment or in a later one
//     (Pending checks both).
//   - Retire removes a segment from the registry only when the segment ended
//     before the given time and all its zsets hold no task; it unlinks the
//     zsets (sealed ones keep their seal member) and drops the segment's
//     fields of the three hashes. Since Add never
//     writes into an ended segment, a grace period longer than the clock skew
//     between processes makes this race free.
//   - Same id + same exec_at added twice is one member: ZADD NX adds nothing
//     when "<id>" is there with that score, and the check script adds
//     nothing either. The same id at another exec_at is a second task with a
//     member of its own, due at its own time.
//   - Remove is exact: for each (id, exec_at) it removes "<id>" only when its
//     score is exec_at's, and "<id>@<score>". It leaves no member of the
//     tasks it is given and touches no other task, so a duplicate or late
//     scan removes nothing it did not read, whatever was added since.
//   - Rarely both forms of one task are in a zset: "<id>@t" was added while
//     "<id>" held another task, that task was removed, and then (id, t) was
//     added again (an input re-read). Due returns such a task once, Remove
//     removes both members; only Backlog counts it twice until then.
//     Forget (which ingest runs on a reschedule's or a replace's old row,
//     often in the same zset as the new one) prevents it: when it removes
//     a plain "<id>" it renames another "<id>@<score>" of the zset to
//     "<id>".
//   - Add refuses an entry with exec_at <= 0, exec_at > 2^53 or id > MaxID,
//     and only that entry (BadEntryError lists them); it indexes the others.
//
// # Redis Cluster
//
// Every command and every script touches one key (the scripts get exactly
// one key, KEYS[1]); no MULTI. Pipelines are not transactions: go-redis's
// ClusterClient splits them by node, so a pipeline may mix keys of any
// slots. No hash tag is needed, and none should be put in the prefix: it
// would put every key into one slot. The scripts are sent with EVALSHA and
// sent again with EVAL when a node answers NOSCRIPT (a restarted or
// failed-over master). No command or script carries more than MaxArgs
// arguments, and a script unpack()s fewer than Lua's limit of about 8,000.
//
// # Memory
//
// A sorted set with at most zset-max-listpack-entries members (default 128)
// is a listpack: a member that fits an int64 is stored as an integer (task
// ids are 63-bit, see payload.TaskID) in 10 bytes, and its score (an
// offset within ±32,767) in 4: 14 bytes a task (20 under layout version 1,
// whose score, an exec_at, takes 10). A "<id>@<score>" member is a string
// of about 26 bytes, which is why it is only used for the rare reused id. Past the limit a zset converts to a skiplist plus dict at about
// 125 bytes per member and never converts back, even when drained. Each key
// also costs about 100 bytes of its own. Shard families keep every zset at
// most Fill + 1 members (Fill tasks and the seal), under the listpack limit
// when Fill < zset-max-listpack-entries, and fill the zsets of a dense
// segment to Fill before opening more: a dense segment costs about the
// listpack bytes of its members plus one key per Fill tasks. A sparse
// segment (fewer tasks than Shards) still pays a key per task: shorter
// segments or fewer shards help there. Measured figures are in
// docs/performance.md.
//
// # Costs
//
// Add first sends the registry ZADD with an HINCRBY of the offered count of
// each of its segments (by its tasks there) and an HMGET of their family
// counts (one round trip). A segment with one family and an offered count
// of at most 0.6*Fill tasks a zset (sparse: a uniform hour with the
// defaults) takes its tasks by plain ZADD NX, one per zset,
// pipelined; only a zset where that added fewer members than it was given
// (a task added again, a reused id) goes on to the walk. The other
// segments walk: one placeScript per zset touched (a fixed number of
// commands whatever the tasks: a ZMSCORE, a ZCARD, a ZADD), pipelined. In
// a segment that grew families, the walk starts each task at the first
// zset of its path that this process has not seen sealed, and first looks
// it up in the sealed zsets on the way, one pipelined ZMSCORE per zset (a
// sealed zset takes no task again, so a task not found there never will
// be; plain ids first, long forms only for an id held at another time: a
// listpack lookup scans the zset). Then one HINCRBY per segment. So an Add
// costs three round trips, four or five in a segment that grew families,
// instead of one script step per family.
// DueMany reads any
// number of zsets with one ZRANGEBYSCORE each in one pipeline; RemoveMany
// runs one removeScript per zset and MaxArgs/2 entries (a ZMSCORE and a
// ZREM) in one pipeline, then one HINCRBY per segment. DueKeys and
// DueGroups read the registry and the family counts of the segments that
// have started, and issue one ZCOUNT per zset of every family in use
// there (normally the current segment and perhaps one or two undrained
// ones). Retire issues one ZCOUNT per zset of the ended segments and one
// UNLINK per zset of those it retires. Backlog reads the registry and the
// pending hash: a few commands however deep the backlog (30 days of
// 1-minute segments is 43,200 registry members and 9 HMGETs), not one per
// zset. Commands are sent in pipelines of at most MaxPipeline commands.
//
// # Scan groups
//
// DueGroups lists due zsets by group: the zsets of one segment whose shard
// is the same modulo Shards. Family f's shard of an id is mix64(id) mod
// Shards*(f+1), so its remainder mod Shards is the id's family-0 shard: a
// task's whole path lies in one group, and a zset is in the same group
// whatever the family count. The dispatcher emits one scan task per group
// (named by the family-0 zset), so a dense segment costs Shards scan tasks
// a tick, not one per zset.
//
// Index and its roles are safe for concurrent use; they start no
// goroutines.
package zset

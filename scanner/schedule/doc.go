// Package schedule holds the scanner's scheduling rules: what a worker
// takes from a zset, when it wakes, when a step's deliveries may be
// written, which deliveries a paused or rate-limited topic holds back, and
// what the releaser lets out of a held topic, in which order and at which
// rate. It is pure, in the manner of taskstate and etcd's raft: its
// functions take the zset entries read, the clock (now is always an
// argument), the Hold's cutoff, the topics' controls and the tokens
// granted, and return what to do. It reads and writes nothing, starts no
// goroutine, never reads the clock and imports no Kafka, Redis or HBase
// client (a test checks it). The scanner (worker.go, release.go) performs
// its answers: it reads the zsets, loads the rows, writes the messages and
// the held sets, and sleeps until the wake times given here.
//
// # A step (worker side)
//
//  1. Cursor.Read: a zset whose entries read before ran out is read again
//     (after its settled entries are removed), up to its scan task's until
//     and BatchSize entries, skipping parked entries.
//  2. Config.Next: the entries due now, or by the wake + Lead when the
//     wake was early for them, and within the Hold's cutoff, a prefix of
//     the cursor (lowest exec_at first); otherwise whether the scan task
//     is done, or when to wake (Config.WakeFor: the next entry's exec_at,
//     coalesced, Lead earlier; or the Hold's poll when it holds the entry
//     back).
//  3. The scanner loads the rows, then waits until WriteAt (the latest
//     exec_at taken): nothing is written before its exec_at.
//  4. Route: a delivery of a paused or rate-limited topic is held (its
//     entry settles once it is in the topic's held set), an expired one
//     goes to the failed topic, the others are written.
//
// # A release round (releaser side)
//
//  1. Fence: how far the releaser may go, the Hold's cutoff or the
//     earliest entry still in the index (due within the order wait) when
//     that is earlier, so that a task a step has not held yet goes out
//     before a later one already held (due order across instances).
//  2. For each held topic not paused: read up to a batch of its held refs
//     due by the fence, lowest first; Admit the prefix that the tokens
//     granted allow (all of them without a rate); write them; release
//     them from the held set. Again: a topic without a rate with a full
//     batch goes another round at once. Forget: a topic with nothing held
//     that no longer holds is dropped from the held topics.
//  3. Bucket is the token bucket that the tokens come from
//     (topicctl's takeScript is the same rule in Redis, shared by the
//     instances): Rate a second, at most Burst(rate) at once.
//
// # Fair release across tenants (not wired yet)
//
// Fair picks, of the tasks of several tenants ready in the same step, up
// to a budget in fair shares (Shares: water-filling, the odd slots going
// round the tenants in name order from a cursor the caller keeps), due
// order within each tenant. TestFairModel checks with bursts of hundreds
// of tasks of one tenant beside a few of others: every step uses its
// budget while tasks are ready, a tenant's picks are its first ready
// tasks, each tenant with ready tasks gets at least min(its ready,
// budget / tenants ready), none waits more than ceil(tenants / budget)
// steps. The scanner does not call it yet (issue 39; docs/tenants.md).
//
// # Invariants (TestModel)
//
//   - Never early: nothing is written before its exec_at, nor past the
//     Hold's cutoff at the time of the write.
//   - Due order within a topic: a rate-limited topic's tasks are released
//     lowest exec_at first (first deliveries; the fence keeps a release
//     from overtaking a task that a step of any worker has not held yet).
//     A topic resumed after a pause does not keep due order between its
//     held backlog and newly due tasks, nor do the steps of two workers.
//   - A rate-limited topic's releases stay within its rate: at most
//     Burst(rate) + rate × t in any span t.
//   - Nothing is held forever: once pauses end and the Hold moves on,
//     every task not cancelled is delivered and every held set empties,
//     across crashes of workers and releasers (a crash re-reads, and may
//     deliver again what was written and not yet removed or released).
package schedule

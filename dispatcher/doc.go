// Package dispatcher turns the clock into scan tasks. At every tick one
// dispatcher instance of the fleet wins a Redis lock for that tick and
// writes, to the scan topic, one scan task per zset of the index that holds
// something due; the scanners do the rest.
//
// # Ticks
//
// Ticks fall on wall-clock multiples of Config.Tick counted from the unix
// epoch (with the default 1m: every minute on the minute), so all instances
// agree on them without talking to each other. The tick at time T looks one
// Lookahead (default one tick) ahead: its scan tasks carry until = T +
// Lookahead in unix milliseconds, and a scan reads the members with score
// <= until. The scanner delivers at once what is already due and each other
// entry when its exec_at comes, so a task is never delivered before its
// exec_at and, when its scan task was emitted before it fell due, late only
// by the time the scan takes. With no lookahead (negative Lookahead) the
// tick at T emits until = T and a task is late by up to one tick.
//
// # Election
//
// At tick T every instance makes exactly one attempt (redsync.WithTries(1))
// at the redsync mutex "{LockPrefix}:dispatch:{T as unix seconds}". Its
// expiry is longer than the tick (Tick + max(Tick, 30s)) so an instance
// whose clock lags cannot win the same tick again, and the winner never
// unlocks it early; the key expires by itself. The winner then
//
//  1. lists the zsets due by the lookahead in groups (Index.DueGroups(until
//     = T + Lookahead)): the due zsets of a segment whose shard is the same
//     modulo Shards, every shard family included,
//  2. writes one scan task per group to the scan topic in one WriteMessages
//     call: zset = the group's family-0 zset (also the Kafka key), more =
//     its other due zsets. A zset is always in the same group, so it is
//     always scanned by one partition, and a segment costs at most Shards
//     scan tasks a tick however many families it grew,
//  3. retires drained segments that ended before T - RetireGrace,
//  4. on the first tick of every BacklogEvery period, refreshes the
//     pending_tasks gauge from Index.Backlog; the losers of that tick drop
//     their pending_tasks series, so exactly one instance exports it and
//     sum() over instances is the backlog.
//
// delayq_dispatch_seconds times each of these phases (emit = 1 and 2,
// retire, backlog). Each is bounded by what is due, not by what is stored:
// DueGroups looks at the segments that have started only, Retire at the ones
// that ended, and zset.Maintenance.Backlog reads per-segment counts (a registry
// read and one HMGET per few thousand segments), not one ZCARD per zset.
//
// Invariants: a missed or failed tick loses nothing, because a scan has an
// upper bound only and a zset that is not drained stays registered and due;
// the next tick lists it again. redsync has no fencing token, so the
// dispatcher fences its writes by time: the writes of the tick at T (scan
// tasks, retire) are made only before T + Tick, when another instance may
// win the next tick, on the monotonic clock read before the lock attempt
// (fence.Until, never past the lock's expiry), checked before the attempt
// and right before each write. A dispatcher paused (a long GC, a frozen
// VM, SIGSTOP) between winning and writing, or woken after the tick's
// turn, writes nothing for it; the next tick covers it. Refusals count in
// delayq_fenced_writes_total{stage="dispatcher"}. Two instances can still
// rarely both emit for one tick; a duplicate scan task is harmless, since
// a scan removes only what it read and delivered.
//
// # Goroutines
//
// Run works in the calling goroutine and starts none; it returns when ctx
// is done.
//
// See docs/ARCHITECTURE.md for where the dispatcher sits in the flow.
package dispatcher

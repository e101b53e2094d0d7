// Package repair heals the Redis index (package zset) from the payload
// store: HBase holds every task and its id row, Redis only when each is
// due, so whatever Redis loses can be read back from HBase.
//
// # Detection (Watcher)
//
// The hash {prefix}:generation is the index's generation marker:
//
//	id      random, written when a repair completes
//	replid  master_replid of the Redis that held it (INFO replication)
//	lost    unix ms of a detected loss whose repair has not completed
//	cause   what showed the loss: generation or replid
//	since   unix ms of the last completed repair
//
// Every delayd checks it at start and every WatchConfig.Interval. A Redis
// that is new, restarted without its data or flushed lacks the id. A
// replica promoted by a failover (Sentinel, or REPLICAOF NO ONE) answers
// with a new master_replid and the old master's as master_replid2: it may
// lack the writes its master acknowledged last (cause replid). A master
// restarted from its AOF has a new master_replid and no master_replid2,
// and may lack its last acknowledged writes too (cause restart): with
// appendfsync everysec Redis answers writes before it writes them to the
// AOF while a background fsync is slow, up to 2 s of them, and an OS
// crash loses the last second. On a Redis Cluster the ids of every master
// are recorded (ReplID asks each): a replica promoted in place of any of
// them, or a master restarted, shows the same way; a master added is only
// recorded. Either way the first process to see it records lost =
// now (HSETNX: the first detection stands, so a repair that dies is redone
// over the same range) and every process tries the redsync lock
// {prefix}:repair:lock; the one that takes it repairs, extending the lock
// while it runs, and closes the loss with a Lua script that writes a new
// id only while lost is still the one it repaired. A Redis flushed again
// mid-repair has no lost field then, and the next check starts over.
//
// # Repair (Run)
//
// Run scans the task rows due in [From, To) over every salt in due-time
// order (internal/rangescan, the pipeline of delayctl backfill too), reads
// the id rows of each batch and asks Decide which rows are pending: not cancelled (the row's d:c or
// the id's d:x), and the id's current due time (d:a after a reschedule or
// a recurring series' next occurrence, else d:s) is the row's own. So a
// moved task is indexed at its new time only, a series only at its next
// occurrence, and a cancelled one not at all. It checks each such row in
// the index (zset.Index.Pending) and adds the missing ones (zset.Index.Add,
// idempotent: an entry already there stays one entry).
//
// Which overdue tasks were still undelivered at the loss, the lost index
// cannot say. So every check that finds nothing wrong also takes a look:
// the oldest due entry O (zset.Reader.Earliest up to now) and the
// lowest ingest watermark W ({prefix}:marks), kept in memory if the
// marker is unchanged afterwards. A task due before O whose id row was
// recorded before W − Margin had been indexed by then and was no longer
// in the index: delivered (Settled). The automatic repair covers
// [min(lost − Lookback, O), lost + MaxDelay + Margin): every task pending
// at the loss, and those that had fallen due at most Lookback before it
// or were held longer; with a look taken it leaves out those it shows
// delivered, so only tasks submitted in the last seconds before the loss
// and already due can be delivered twice. A process that took no look
// (started after the loss) re-delivers what fell due in the Lookback. It leaves out tasks whose id row a message recorded
// after lost + Margin wrote (d:sr, d:rr): ingest has indexed those in the
// new index, and one that fell due since may have been delivered already.
// After a failover or a restart it also leaves out the tasks whose index
// writes the new master holds, by a probe: every check, and every Probe
// (1 s) between checks while the last check found the masters unchanged,
// reads the lowest ingest watermarks of delay-input and of
// delay-input-slow and then writes the next value of a probe key of its
// own process ({prefix}:probe:{random}, kept an hour), remembering the
// last 64 values with the watermarks read before each; a value counts
// only if the masters are still the same after it is written. Redis
// applies a master's writes in order, in its AOF and its replication
// stream: the value the new master holds says that every write
// acknowledged before it survived, among them the index writes of every
// task recorded before its watermarks (ingest commits a batch after its
// Redis writes; a watermark passes committed input only). Only tasks
// recorded since those watermarks less Margin can have lost theirs, and
// the window starts there (lostSince), later or earlier than Failover
// before the loss. Where the probe tells nothing it starts Failover
// before the master was last seen up (the last check that found it, else
// lost), or at the probe's delay-input watermark when that is earlier,
// and the log line says why: no value this process remembers survived,
// a Redis Cluster (its index spans masters the probe does not live on:
// no probe is written), or no delay-input-slow watermark at the probe
// (an older ingest: the slow lanes index tasks recorded long before, and
// nothing says which). Record times say when a task was sent, not when
// ingest indexed it: a lagging ingest only moves the window back. It adds
// the tasks not yet due without asking the index first (Unchecked): an Add
// of a task already there adds nothing, and the checks would be most of
// its time. An overdue task it checks first: the index adds one whose
// segment has ended to the segment of now, beside the entry it may have.
// A task it adds that had fallen due is delivered at once, a second time
// if it had been delivered before the loss: the price of the Lookback,
// counted by delayq_repair_overdue_total.
//
// # Deliveries wait for the repair (Guard)
//
// A restarted or promoted Redis answers with the index it kept, and the
// tasks due while it was away, or sent then and indexed by ingest once it
// is back, would be delivered at once, before the check sees the loss;
// the repair would then add those recorded in its window again, and they
// would go out twice. A Guard, the scanner's second Hold, looks every
// 200 ms at what Check looks at (Suspect: a loss recorded, no generation,
// masters that show a failover or a restart) and holds every delivery
// while it finds the index suspect, from its start and after a look that
// failed, until a look finds it whole (the repair healed it): then the
// entries the repair adds again are still there and add nothing. It holds
// at most 5 min (one WARN line), so that a repair that cannot finish does
// not stop deliveries for good; a delayd with a negative --repair-interval
// runs neither a repair nor a Guard.
//
// # What it does not need
//
// Run itself needs no hold (a delayctl repair runs beside deliveries): an
// entry it adds late is delivered late (by at most the repair's
// duration), an overdue one at once. Cancels need
// no hold of their own: the scanner reads the task row before delivering
// and skips a row with a cancel marker, so a cancel stored before, during
// or after the repair wins over an entry the repair adds; a cancel by id
// alone marks the row at the id's current due time, which is the only row
// the repair indexes. The ingest watermarks ({prefix}:marks) are written
// again by every ingest within 200 ms, and the offered/pending/families
// hashes and the segment registry are rebuilt by the Adds the repair makes.
//
// # Goroutines
//
// Run starts up to Checkers goroutines per batch and waits for them.
// Watcher.Run checks on its caller's goroutine; while it repairs, one more
// goroutine extends the lock. Both return only after everything they
// started has ended.
package repair

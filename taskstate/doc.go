// Package taskstate holds the rules of a task's life by id: what a batch
// of submits, cancels (by id and due time, by id alone), reschedules and
// replaces does to the tasks their ids name, and what a recurring task's next
// occurrence does. It is pure: its functions take the messages, the
// stored id states, now and Config, and return a Plan; it reads and
// writes nothing and imports no Kafka, Redis or HBase client (a test
// checks it). Ingest and the scanner carry plans out, with retries,
// through one required interface each (ingest.Store and ingest.Index,
// scanner.Store and scanner.Index).
//
// # The id row
//
// Every task name has an id row (State) beside its task rows: d:s the due
// time of its latest submit, d:a the current due time after a move, d:r
// the latest reschedule's new due time, d:x cancelled by id alone, and
// the record timestamps d:sr (of the latest submit), d:rr (of the latest
// reschedule), d:rf (of a reschedule failed for an unknown id) and d:xr
// (of the latest cancel by id alone), and for replaces d:u and d:ur (the
// latest replace's due time and record timestamp) and d:v (the record
// timestamp of the replace whose row is current: State.Row). A
// write sets only the cells it names (Write, State.Apply); each store
// makes a write of a row atomic and a read after it sees it.
//
// # Order (what ingest does per batch, and why a replay completes it)
//
//  1. put the batch's task rows (submits; cancels by id and due time as
//     the cancel marker of their row);
//  2. flag the ids that have an op by id (Redis, kept for the op lifetime),
//     then write each id's cells (Begin: one Write per id, later messages
//     of the batch winning);
//  3. read the op flags of the other ids, then read back the id rows of
//     the ops and of the flagged submits; Decide;
//  4. read the stored rows that moves copy (Plan.Moves), Settle;
//  5. put the copies (Plan.Copies: a task row at its new due time);
//  6. index the submits that stay (not Plan.Skip) and the copies;
//  7. put the cancel markers (Plan.Markers: the rows a move leaves, the
//     rows a cancel by id names);
//  8. write the id rows' new current due times (Plan.Ats).
//
// Each step is idempotent and a later step only depends on earlier ones,
// so a crash between any two leaves a state from which handling the same
// batch again reaches the same end: the copy exists before the index
// names it, the index names it before the old row is marked, and the
// id row names the new due time last, so a re-read still finds the move
// to make (Settle finishes a move whose copy exists: the row at To).
//
// The scanner, for a delivered occurrence of a recurring task, stores the
// next occurrence, indexes it, records it in the id row (Track: d:a),
// reads the row back and marks the next occurrence when the name is
// cancelled by id (Stopped), all before it produces the current one,
// which it then does not produce either when the name is cancelled.
//
// # Rules
//
//   - Order-independence: a submit and an op by id each write their own
//     cell before they read the other's (flag then cell for the op, cell
//     then flag for the submit), so at least one of the two sees the other
//     and applies the op, whatever partition or process each came through.
//   - Cancel by id alone (CancelID) marks the rows at the current due time
//     and at d:r, every submit of the id, and every occurrence planned
//     after it; a reschedule of a cancelled id is refused.
//   - Reschedule of a stored task not yet due moves it: the task row is
//     copied to the new time, indexed there, the old row marked, d:a set.
//     A reschedule of a cancelled task is refused, and so is one read
//     after its task's due time, unless it was recorded Config.HoldLead or
//     more before that time through delay-input: the scanner's hold keeps
//     the task until ingest has stored the reschedule, so it moves the task
//     as a cancel would mark it (late).
//   - A submit whose id row has a d:r elsewhere is moved there: its
//     reschedule came first (another partition, delay-input-slow), or the
//     batch is read again after a crash.
//
// # Replace
//
// A replace is a submit that takes the place of the task of its id. Its
// task row is under VersionID(id, its record time), never under the id,
// so it cannot share a row with the task it replaces (same due time or
// not) and a late submit of that task cannot overwrite it. It is an op by
// id (flag, cell d:u/d:ur, read back). Rules, by record time:
//
//   - The latest replace of an id wins: it marks the current task row (and
//     a pending reschedule's copy) and becomes current (d:a, d:v); an
//     older replace, or a submit recorded before it, is marked and not
//     indexed, whichever ingest handles first (a late submit, a re-read).
//   - A reschedule recorded before the replace does nothing; one recorded
//     after it moves the new task, also when ingest handles it first (the
//     replace then goes to the reschedule's time) or while the replace is
//     written but not carried out (it waits in d:r for it).
//   - A replace of an id with no task stored is a submit.
//   - A replace of an id cancelled by id alone before it is refused ("id
//     cancelled"); one cancelled after it (d:xr) is cancelled, not refused.
//   - A replaced series stops (State.Over).
//
// Replaces of one id are ordered by record time, not by partition, when
// ingest handles them one after the other (one partition, a re-read, or
// seconds apart). Two replaces of one id handled at the same moment by
// two processes race on d:u: one of them wins, not necessarily the later.
//
// # Unknown ids
//
// An op by id may arrive before its task (another partition,
// delay-input-slow) or name an id that never comes; the rules tell the
// two apart by time only:
//
//   - A reschedule applies only to a task of its id recorded less than
//     RescheduleGrace after it (record timestamps d:sr and d:rr, see
//     stale): whichever of the two ingest handles first, a task recorded
//     later stays at its own due time. So a stale reschedule of an id
//     never affects a later submit of it.
//   - A reschedule that finds no such task stored when ingest reads it
//     RescheduleGrace or more old is refused (delay-failed) and its cell
//     is marked failed (d:rf = its record time), so that a re-read of the
//     batch refuses it again and no task arriving later moves. A younger
//     one waits in the id row (d:r) for its task, without holding its
//     batch: Plan.Checks has ingest store and index a check row
//     (CheckID), its failed-topic message, due RescheduleGrace +
//     CheckSlack after its record time. A task recorded in time that
//     moves to it marks the check (Move.check); otherwise the scanner
//     sends the check to the failed topic when it is due, which it does
//     only once ingest has stored every message of delay-input appended
//     before then (the watermark hold), so the verdict and the move agree.
//     Checks survive a crash as any row (a re-read plans the same one); a
//     task that comes through delay-input-slow, outside the hold, later
//     than the check may be moved after the reschedule was reported.
//   - A cancel by id alone is kept: d:x stays for MaxDelay + Retention
//     (the op flag as long; Config.CancelBlock after its record time d:xr
//     bounds it exactly, see State.Blocks), and no task of the id is
//     delivered in that time. Record times tell the two kinds of submit
//     apart (State.Reuses): one recorded before the cancel (or at its
//     millisecond) is the task the cancel overtook (another partition)
//     and is stored cancelled, silently; one recorded after it reuses the
//     id and is refused (CancelledReason: "id cancelled: …", with the
//     block's end), as is a replace not recorded before it. A re-read
//     decides the same (the block is judged by record time, not by when
//     ingest reads the message). A reuse that ingest stores before it
//     reads the cancel (the cancel's partition behind) is cancelled by it
//     silently: it was not blocked when it was stored. After the block,
//     d:x lives on until its TTL ends (its write time + the same length,
//     later by ingest's lag at the cancel): until then State.Over still
//     stops a series submitted under the id, and payload.State still says
//     cancelled.
//
// # Invariants
//
//   - At most one due time of an id is delivered for one submit: a move
//     marks the row it leaves before the id row names the new time.
//   - A cancelled id is never delivered again within the op lifetime.
//   - Nothing here depends on the order in which two ingest processes
//     handle two messages of the same id, only on the cells each sees.
package taskstate

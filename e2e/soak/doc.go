// Package soak is delayq's nemesis soak: delayd (one to three) on a
// private stack under mixed traffic while a seeded random schedule of
// overlapping faults hits it, judged per fault window. `make soak` runs
// it (build tag soak; `make test` compiles only the schedule and its unit
// tests).
//
//	make soak [SOAK_MINUTES=20] [SOAK_SEED=n] [SOAK_DELAYD=2] [SOAK_RATE=100]
//
// # Schedule
//
// Schedule is a pure function of the seed and the Config: the same seed
// gives the same faults at the same offsets (a failing seed replays its
// schedule; the unit tests hold it to that). A fault starts every 5–30 s
// of the first SOAK_MINUTES, after 30 s of traffic; one whose resource (a
// delayd, a service, the network path to a service) is still held by an
// earlier fault, or beyond two overlapping faults, is left out; at run
// time a fault whose resource an earlier one still holds (its healing
// took longer than the schedule allowed: a restart waiting for HBase)
// waits for it and says so. The kinds:
// kill -9 and SIGTERM of a delayd (started again 1–5 s later), SIGSTOP of
// a delayd held 10–20 s (past the Kafka session timeout of 6 s and the
// dispatch lock's TTL of one tick) then SIGCONT, Redis killed -9 (5–20 s),
// HBase stopped (20–60 s), the broker stopped (10–30 s), and between
// delayd and Redis, HBase or Kafka through toxiproxy: added latency
// (100–800 ms, 10–40 s), a black hole (10–30 s) and connection resets
// (5–20 s).
//
// The network faults use e2etest.ProxiedStack (ports 32000–32095, data in
// .local/soak): Kafka's PROXIED listener advertises its proxy, the region
// server registers as 127.0.0.2 behind its proxy, ZooKeeper and Redis are
// proxied; the HBase master is not (delayd only creates its table there).
//
// # Traffic
//
// An outside kafka-go producer writes e2etest's stream at SOAK_RATE tasks
// a second (delays 0–30 s, 3 % cancelled, half of the cancels before
// their task, half after), and beside it every second a task rescheduled
// (the reschedule before or after the task), a task replaced (its new
// version due at another time), every 10 s a recurring series (5
// occurrences 2 s apart) and a malformed message. An op written only
// after a retry, or less than 3 s before its task is due, may or may not
// win: its tasks are not judged.
//
// # Output
//
// The run prints the seed and the schedule first, then every fault with
// its start and end (the end is when its healing returned: delayd ready,
// the service started; a delayd restarted while HBase or Kafka is away
// is given 5 min to be ready), then the checker's figures for each fault window
// (the tasks due from the fault's start to 30 s after its end): lost,
// duplicates, cancelled delivered, early, p99 and max lateness; then the
// figures outside every window and over the whole run. It fails on any
// task lost, early, cancelled yet delivered or unknown, any valid task or
// cancel in delay-failed, a malformed message missing from it, or a
// delayd that exited by itself; duplicates are reported, not failed
// (kill -9 and a black hole make at-least-once show).
//
// A CLUSTER=1 variant is not done.
package soak

package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/modeltest"
)

// The model test runs random schedules through the rules of this package,
// carried out by a small in-memory executor in the scanner's order (a
// step: read, Next, load, wait for WriteAt, Route, write or hold, settle,
// remove at the next read; a release round every releaseEvery: Fence, read
// the held refs, Want, Bucket.Take, Admit, write, release) by two workers
// and a releaser that crash at random between any two of those steps, and
// checks what a consumer of the business topics would observe.

const (
	t0           = int64(1_767_225_600_000) // 2026-01-01, unix ms
	span         = 3000                     // due times within [t0, t0+span)
	releaseEvery = 50                       // ms
	releaseBatch = 4
	orderWait    = 5000 // ms
	restart      = 100  // ms until a crashed worker's scan tasks come again
	giveUp       = 60_000
	topics       = 3
	zsets        = 4
	workers      = 2
)

type task struct {
	e         Entry
	topic     int
	zset      int
	cancelled bool
}

type write struct {
	id      uint64
	topic   int
	exec    int64
	at      int64
	release bool
}

// hold is a Hold like watermark.Follower's: deliverable up to a horizon,
// lead ahead of ingest's progress at the current time (clock), which
// stands still over [from, to) (a stalled input partition).
type hold struct {
	lead, from, to int64
	clock          *int64
}

func (h *hold) horizon(at int64) int64 {
	if at >= h.from && at < h.to {
		at = h.from
	}
	return at + h.lead
}
func (h *hold) Cutoff(now int64) int64 { return min(now, h.horizon(*h.clock)) }
func (h *hold) Poll() time.Duration    { return 20 * time.Millisecond }

type topicCtl struct {
	rate   int
	pauses [][2]int64 // [from, to)
}

func (c topicCtl) at(now int64) Control {
	ctl := Control{Rate: c.rate}
	for _, p := range c.pauses {
		ctl.Paused = ctl.Paused || now >= p[0] && now < p[1]
	}
	return ctl
}

type zsetState struct {
	cur     Cursor
	active  bool
	settled []Entry
}

type pending struct {
	at  int64
	due []Entry
}

type worker struct {
	zs      []int // zsets it scans
	free    int64 // busy until (a step's load)
	pending *pending
}

type sim struct {
	rng     *rand.Rand
	cfg     Config
	hold    *hold
	now     int64
	tasks   map[uint64]task
	ctls    [topics]topicCtl
	index   [zsets]map[Entry]bool
	held    [topics]map[Entry]bool
	buckets [topics]Bucket
	zs      [zsets]zsetState
	ws      [workers]*worker
	writes  []write
	log     []string
}

func (s *sim) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%6d ", s.now-t0)+fmt.Sprintf(format, args...))
}

func (s *sim) crash() bool { return s.rng.IntN(25) == 0 }

func (s *sim) generate() {
	lead := []time.Duration{0, 30 * time.Millisecond, 50 * time.Millisecond}
	co := []time.Duration{-1, 0, 50 * time.Millisecond}
	s.hold = &hold{lead: int64(s.rng.IntN(300)), clock: &s.now}
	if s.rng.IntN(2) == 0 {
		s.hold.from = t0 + int64(s.rng.IntN(span))
		s.hold.to = s.hold.from + int64(s.rng.IntN(1000))
	}
	s.cfg = Config{Prefetch: lead[s.rng.IntN(3)], Coalesce: co[s.rng.IntN(3)], BatchSize: 1 + s.rng.IntN(6), Hold: s.hold}
	for i := range s.ctls {
		if s.rng.IntN(2) == 0 {
			s.ctls[i].rate = 1 + s.rng.IntN(40)
		}
		for range s.rng.IntN(3) {
			from := t0 + int64(s.rng.IntN(span))
			s.ctls[i].pauses = append(s.ctls[i].pauses, [2]int64{from, from + int64(s.rng.IntN(1500))})
		}
		s.held[i] = map[Entry]bool{}
	}
	for i := range s.index {
		s.index[i] = map[Entry]bool{}
		s.zs[i] = zsetState{cur: NewCursor(time.UnixMilli(t0)), active: true}
	}
	for i := range s.ws {
		s.ws[i] = &worker{free: t0}
	}
	for z := range zsets {
		s.ws[z%workers].zs = append(s.ws[z%workers].zs, z)
	}
	s.tasks = map[uint64]task{}
	for id := range uint64(20 + s.rng.IntN(40)) {
		t := task{e: Entry{ID: id + 1, ExecAt: t0 + int64(s.rng.IntN(span))}, topic: s.rng.IntN(topics),
			zset: s.rng.IntN(zsets), cancelled: s.rng.IntN(10) == 0}
		s.tasks[t.e.ID] = t
		s.index[t.zset][t.e] = true
	}
}

// sorted returns the entries of m, lowest exec_at first.
func sorted(m map[Entry]bool, until int64) []Entry {
	var es []Entry
	for e := range m {
		if e.ExecAt <= until {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b Entry) int {
		if a.ExecAt != b.ExecAt {
			return int(a.ExecAt - b.ExecAt)
		}
		return int(a.ID) - int(b.ID)
	})
	return es
}

// workerCrash drops what a worker holds in memory: its cursors, what they
// settled, a step in flight. Its scan tasks come again after restart.
func (s *sim) workerCrash(w *worker) {
	s.logf("worker crash")
	w.pending = nil
	for _, z := range w.zs {
		s.zs[z] = zsetState{cur: NewCursor(time.UnixMilli(s.now + restart)), active: true}
	}
	w.free = s.now + restart
}

// step is a worker's step of its zsets whose wake has come.
func (s *sim) step(w *worker) {
	now := time.UnixMilli(s.now)
	var due []Entry
	for _, z := range w.zs {
		st := &s.zs[z]
		if !st.active || st.cur.Wake.After(now) {
			continue
		}
		if flush, read := st.cur.Read(); flush {
			for _, e := range st.settled {
				delete(s.index[z], e)
			}
			st.settled = nil
			if read {
				es := sorted(s.index[z], t0+giveUp)
				st.cur.Got(es[:min(len(es), s.cfg.BatchSize)], s.cfg.BatchSize, nil)
			}
		}
		next := s.cfg.Next(&st.cur, now)
		switch {
		case next.Done:
			// The dispatcher emits another scan task every tick while
			// the zset holds entries.
			st.active = len(s.index[z]) > 0
			st.cur = NewCursor(now.Add(restart * time.Millisecond))
		case next.Parked:
			panic("nothing is parked in the model")
		}
		due = append(due, next.Due...)
		if s.crash() {
			s.workerCrash(w)
			return
		}
	}
	if len(due) == 0 {
		return
	}
	at := max(s.now+int64(s.rng.IntN(20)), WriteAt(due))
	w.pending, w.free = &pending{at: at, due: due}, at
	s.logf("step takes %v, writes at %d", due, at-t0)
}

// settle records that e of zset z may leave it.
func (s *sim) settle(e Entry) {
	z := s.tasks[e.ID].zset
	s.zs[z].settled = append(s.zs[z].settled, e)
}

// finish writes or holds a step's deliveries at their time.
func (s *sim) finish(w *worker) {
	p := w.pending
	w.pending = nil
	for _, e := range p.due {
		t := s.tasks[e.ID]
		if t.cancelled {
			s.settle(e)
			continue
		}
		switch Route(s.ctls[t.topic].at(s.now), false, false) {
		case HoldBack:
			s.held[t.topic][e] = true
		case Write:
			s.writes = append(s.writes, write{id: e.ID, topic: t.topic, exec: e.ExecAt, at: s.now})
		}
		s.settle(e)
	}
	if s.crash() {
		s.workerCrash(w)
	}
}

// release is a release round at now.
func (s *sim) release() {
	cutoff := s.cfg.Cutoff(s.now)
	earliest, found := int64(0), false
	for z := range s.index {
		for e := range s.index[z] {
			if e.ExecAt >= s.now-orderWait && e.ExecAt <= cutoff && (!found || e.ExecAt < earliest) {
				earliest, found = e.ExecAt, true
			}
		}
	}
	fence := Fence(cutoff, earliest, found)
	for topic := range topics {
		ctl := s.ctls[topic].at(s.now)
		if !Releasable(ctl) {
			continue
		}
		for range 20 {
			refs := sorted(s.held[topic], fence)
			refs = refs[:min(len(refs), releaseBatch)]
			read := len(refs)
			granted := read
			if want := Want(ctl, read); want >= 0 {
				granted = s.buckets[topic].Take(ctl.Rate, want, time.UnixMilli(s.now))
			}
			out := Admit(ctl, refs, granted)
			for _, e := range out {
				s.writes = append(s.writes, write{id: e.ID, topic: topic, exec: e.ExecAt, at: s.now, release: true})
			}
			if len(out) > 0 {
				s.logf("release %d (fence %d): %v", topic, fence-t0, out)
			}
			if s.crash() {
				s.logf("releaser crash")
				return
			}
			for _, e := range out {
				delete(s.held[topic], e)
			}
			if !Again(ctl, read, releaseBatch) {
				break
			}
		}
	}
}

// quiet reports whether nothing is left to deliver.
func (s *sim) quiet() bool {
	for z := range s.index {
		if len(s.index[z]) > 0 {
			return false
		}
	}
	for t := range s.held {
		if len(s.held[t]) > 0 {
			return false
		}
	}
	return true
}

// run advances the clock from event to event: a worker's wake, a write
// that falls due, a release tick.
func (s *sim) run() {
	s.now = t0
	nextRelease := t0
	for !s.quiet() && s.now < t0+giveUp {
		next := nextRelease
		for _, w := range s.ws {
			if w.pending != nil {
				next = min(next, w.pending.at)
				continue
			}
			for _, z := range w.zs {
				if s.zs[z].active {
					next = min(next, max(s.zs[z].cur.Wake.UnixMilli(), w.free))
				}
			}
		}
		s.now = max(s.now, next)
		for _, w := range s.ws {
			switch {
			case w.pending != nil && w.pending.at <= s.now:
				s.finish(w)
			case w.pending == nil && w.free <= s.now:
				s.step(w)
			}
		}
		if nextRelease <= s.now {
			s.release()
			nextRelease = s.now + releaseEvery
		}
	}
}

// check returns what a consumer would see wrong.
func (s *sim) check() []string {
	var errs []string
	first := map[uint64]bool{}
	lastRelease := map[int]int64{}
	byTopic := map[int][]int64{}
	for _, w := range s.writes {
		if w.at < w.exec {
			errs = append(errs, fmt.Sprintf("task %d due at %d written early, at %d", w.id, w.exec-t0, w.at-t0))
		}
		if h := s.hold.horizon(w.at); w.exec > h {
			errs = append(errs, fmt.Sprintf("task %d due at %d written at %d past the hold's horizon %d", w.id, w.exec-t0, w.at-t0, h-t0))
		}
		if s.tasks[w.id].cancelled {
			errs = append(errs, fmt.Sprintf("cancelled task %d written", w.id))
		}
		if w.release && s.ctls[w.topic].rate > 0 {
			byTopic[w.topic] = append(byTopic[w.topic], w.at)
			if !first[w.id] && w.exec < lastRelease[w.topic] {
				errs = append(errs, fmt.Sprintf("topic %d (rate %d): task %d due at %d released at %d after one due at %d",
					w.topic, s.ctls[w.topic].rate, w.id, w.exec-t0, w.at-t0, lastRelease[w.topic]-t0))
			}
			if !first[w.id] {
				lastRelease[w.topic] = max(lastRelease[w.topic], w.exec)
			}
		}
		first[w.id] = true
	}
	for topic, ats := range byTopic {
		rate := s.ctls[topic].rate
		for i := range ats {
			for j := i; j < len(ats); j++ {
				if allowed := float64(Burst(rate)) + float64(rate)*float64(ats[j]-ats[i])/1000; float64(j-i+1) > allowed+1e-9 {
					errs = append(errs, fmt.Sprintf("topic %d (rate %d): %d releases in [%d, %d], at most %.1f allowed",
						topic, rate, j-i+1, ats[i]-t0, ats[j]-t0, allowed))
					return errs
				}
			}
		}
	}
	for id, t := range s.tasks {
		if !t.cancelled && !first[id] {
			errs = append(errs, fmt.Sprintf("task %d (topic %d, due at %d) never delivered (held: %v)", id, t.topic, t.e.ExecAt-t0, s.held[t.topic][t.e]))
		}
	}
	if !s.quiet() {
		errs = append(errs, "index or held sets not empty at the end")
	}
	return errs
}

// TestModel runs 500 seeded schedules of up to 60 tasks on 3 topics
// (random rates, pauses, hold lags and stalls, prefetch, coalescing,
// batch sizes, cancels, crashes of workers and releaser); a failure names
// its seed, which `go test -run TestModel -model.seed N` replays first.
func TestModel(t *testing.T) {
	modeltest.Run(t, 500, func(seed uint64) error {
		s := &sim{rng: rand.New(rand.NewPCG(seed, 0))}
		s.generate()
		s.run()
		errs := s.check()
		if len(errs) == 0 {
			return nil
		}
		return fmt.Errorf("prefetch %v, coalesce %v, batch %d, hold lead %d stalled [%d, %d), controls %+v:\n%s\nlast events:\n%s",
			s.cfg.Prefetch, s.cfg.Coalesce, s.cfg.BatchSize, s.hold.lead, s.hold.from-t0, s.hold.to-t0, s.ctls,
			strings.Join(errs[:min(5, len(errs))], "\n"), strings.Join(s.log[max(0, len(s.log)-10):], "\n"))
	})
}

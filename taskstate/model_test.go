package taskstate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/modeltest"
)

// The model test runs random interleavings of ops on two partitions
// through the plans of this package, carried out in the documented order
// by a small in-memory executor that may crash between any two steps (the
// batch is then handled again) or handle a batch twice (a lost commit),
// and checks what a user would observe against a reference model.

const (
	grace  = 30 * time.Second
	margin = 5 * time.Second // around a grace's end, either outcome is right
	// block is how long a cancel by id alone blocks its id here
	// (--max-delay + --retention in delayd): short, so that a submit
	// after its end is in the run.
	block = 3 * time.Minute
)

type rowKey struct {
	id uint64
	at int64
}

type row struct{ live, marked bool }

// world is the stores: task rows, index, id rows, op flags, failed ops.
type world struct {
	rows    map[rowKey]row
	index   map[rowKey]bool
	ids     map[uint64]State
	flags   map[uint64]bool
	failed  map[int]string   // by message number
	decided map[int]int64    // when each message's batch was last completed
	written map[uint64]int64 // when each id's submit first wrote its id row
	series  map[uint64]int64 // recurring ids: first due time
	checks  map[uint64]int   // check rows: the reschedule's message number
	sent    map[uint64][]sent
	// step counts Decides and cancel cells, to order them: cancelled is
	// the step at which each id's cancel by id first wrote its cell,
	// first the step of each message's first Decide.
	step      int
	cancelled map[uint64]int
	first     map[int]int
}

// sent is a delivery: which due time, when.
type sent struct{ at, when int64 }

// scan is one scanner pass at now over the due entries of recurring ids,
// in the scanner's order: plan the next occurrence (store, index, Track,
// read back, Stopped markers), deliver, remove the entry. A crash (the
// scanner's, independent of ingest's) ends the pass; the entry stays and
// is delivered again.
func (w *world) scan(now, mark int64, rng *rand.Rand) {
	w.fire(mark)
	var due []rowKey
	for k := range w.index {
		if _, ok := w.series[k.id]; ok && k.at <= now {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b rowKey) int { return int(a.at - b.at) })
	for _, k := range due {
		crash := rng.IntN(8)
		if r := w.rows[k]; r.live && !r.marked {
			var next []Occurrence
			if (k.at-w.series[k.id])/seriesEvery+1 < seriesCount {
				next = []Occurrence{{ID: k.id, Name: "series", At: k.at + seriesEvery}}
				w.put(rowKey{k.id, next[0].At}, false)
				w.index[rowKey{k.id, next[0].At}] = true
			}
			if crash == 1 {
				return
			}
			for _, wr := range Track(next) {
				w.ids[wr.ID] = w.ids[wr.ID].Apply(wr)
			}
			if crash == 2 {
				return
			}
			st := w.ids[k.id]
			for _, m := range Stopped(next, []State{st}[:len(next)]) {
				w.put(rowKey{m.ID, m.At}, true)
			}
			if !st.Over() {
				w.sent[k.id] = append(w.sent[k.id], sent{k.at, now})
			}
		}
		if crash == 3 {
			return
		}
		delete(w.index, k)
	}
}

// fire delivers the check rows due by the ingest watermark mark plus the
// scanner's lead (2 s): their reschedules fail, unless marked.
func (w *world) fire(mark int64) {
	for k := range w.index {
		if n, ok := w.checks[k.id]; ok && k.at <= mark+2000 {
			if r := w.rows[k]; r.live && !r.marked {
				w.failed[n] = "check"
			}
			delete(w.index, k)
		}
	}
}

func (w *world) put(k rowKey, marker bool) {
	r := w.rows[k]
	if marker {
		r.marked = true
	} else {
		r.live = true
	}
	w.rows[k] = r
}

// msg is a produced message: an op, its partition, and a number.
type msg struct {
	Op
	n    int
	part int
}

// errCrash ends a handling between two steps.
type errCrash struct{}

// handle carries out the plan of batch at now, crashing after step crash
// (none when crash < 0). It returns whether it ended.
func (w *world) handle(batch []msg, now int64, crash int) bool {
	step := 0
	cut := func() bool { step++; return step == crash }
	ops := make([]Op, len(batch))
	for i, m := range batch {
		ops[i] = m.Op
	}
	for _, o := range ops {
		if o.Kind == Submit || o.Kind == CancelAt || o.Kind == Replace {
			w.put(rowKey{o.row(), o.At}, o.Kind == CancelAt)
		}
	}
	if cut() {
		return false
	}
	b := Begin(ops, func(int) bool { return false })
	opIDs := b.OpIDs()
	for _, id := range opIDs {
		w.flags[id] = true
	}
	if cut() {
		return false
	}
	for _, wr := range b.Writes {
		w.ids[wr.ID] = w.ids[wr.ID].Apply(wr)
		if _, ok := w.cancelled[wr.ID]; !ok && wr.Cancel {
			w.step++
			w.cancelled[wr.ID] = w.step
		}
		if _, ok := w.written[wr.ID]; !ok && (wr.Submitted != 0 || wr.Replacing != 0) {
			w.written[wr.ID] = now
		}
	}
	if cut() {
		return false
	}
	var flagged []bool
	if len(opIDs) < len(b.IDs) {
		for _, id := range b.IDs {
			flagged = append(flagged, w.flags[id])
		}
	}
	read := b.Reads(flagged)
	states := make([]State, len(b.IDs))
	for k, id := range b.IDs {
		if read[k] {
			states[k] = w.ids[id]
		}
	}
	p := Decide(b, states, now, Config{RescheduleGrace: grace, CancelBlock: block})
	w.step++
	for _, m := range batch {
		if _, ok := w.first[m.n]; !ok {
			w.first[m.n] = w.step
		}
	}
	var rows []Row
	for _, m := range p.Moves {
		for _, at := range []int64{m.From, m.To} {
			switch r := w.rows[rowKey{m.Row, at}]; {
			case r.marked:
				rows = append(rows, Marked)
			case r.live:
				rows = append(rows, Live)
			default:
				rows = append(rows, NoRow)
			}
		}
	}
	p.Settle(rows)
	for _, c := range p.Copies {
		w.put(rowKey{c.ID, c.To}, false)
	}
	for _, c := range p.Checks {
		w.put(rowKey{c.ID, c.At}, false)
		w.checks[c.ID] = batch[c.Op].n
	}
	if cut() {
		return false
	}
	for i, o := range ops {
		if _, no := p.Refused[i]; !no && (o.Kind == Submit || o.Kind == Replace) && !p.Skip[i] {
			w.index[rowKey{o.row(), o.At}] = true
		}
	}
	for _, c := range p.Copies {
		if _, no := p.Refused[c.Origin]; !no {
			w.index[rowKey{c.ID, c.To}] = true
		}
	}
	for _, c := range p.Checks {
		w.index[rowKey{c.ID, c.At}] = true
	}
	if cut() {
		return false
	}
	for _, m := range p.Markers {
		w.put(rowKey{m.ID, m.At}, true)
	}
	if cut() {
		return false
	}
	for _, wr := range p.Ats {
		w.ids[wr.ID] = w.ids[wr.ID].Apply(wr)
	}
	for i, text := range p.Refused {
		w.failed[batch[i].n] = text
	}
	for _, m := range batch {
		w.decided[m.n] = now
	}
	return true
}

// delivered returns the rows of the name whose id is id that the scanner
// would deliver: its own, and those of its replaces (recorded at reps).
func (w *world) delivered(id uint64, reps ...int64) []rowKey {
	rows := []uint64{id}
	for _, r := range reps {
		rows = append(rows, VersionID(id, r))
	}
	var out []rowKey
	for k := range w.index {
		if r := w.rows[k]; slices.Contains(rows, k.id) && r.live && !r.marked {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b rowKey) int { return int(a.at - b.at) })
	return out
}

// Scenarios, one per id.
const (
	scPlain         = iota // submit
	scCancelAt             // submit, cancel by id and due time, any order
	scCancelID             // submit, cancel by id alone, any order
	scCancelFirst          // cancel by id alone of an unknown id, a submit later
	scResched              // submit, reschedule, close in time, any order
	scStale                // reschedule of an unknown id, a submit well after its grace
	scGhost                // reschedule of an id never submitted
	scSeries               // a recurring task, a cancel by id alone at a random time or none
	scReplace              // submit, replace (same due time or not), maybe a reschedule after the replace
	scReplaceNew           // replace of an id never submitted: a submit
	scReplaceCancel        // submit, replace, cancel by id alone before or after the replace
	scReuse                // cancel by id alone, a submit of the id within the block or after its end
	scenarios
)

// A series is due at due, due+every, … seriesCount times.
const (
	seriesEvery = 20_000 // ms
	seriesCount = 3
)

type idCase struct {
	kind        int
	cancel      int // the series' cancel by id, -1 none
	id          uint64
	due, to     int64
	submit, res int   // message numbers, -1 none
	rep         int   // the replace's message number, -1 none
	repRec      int64 // its record time
	repAt       int64 // its due time
	cancelRec   int64 // the cancel by id alone's record time, 0 none
	submitRec   int64 // the submit's record time
}

// expect is what the user should see delivered of the id: its reschedule
// moves the task unless the reschedule failed; a stale one never does; a
// replace's row is delivered in place of the submit's, at the replace's
// due time or its reschedule's.
func (c idCase) expect(resFailed bool) []rowKey {
	own := func(at int64) []rowKey { return []rowKey{{c.id, at}} }
	switch {
	case c.kind == scPlain || c.kind == scStale:
		return own(c.due)
	case c.kind == scReuse && c.cancelRec+block.Milliseconds() <= c.submitRec:
		return own(c.due) // the block was over

	case c.kind == scResched && resFailed:
		return own(c.due)
	case c.kind == scResched:
		return own(c.to)
	case (c.kind == scReplace || c.kind == scReplaceNew) && c.res >= 0:
		return []rowKey{{VersionID(c.id, c.repRec), c.to}}
	case c.kind == scReplace || c.kind == scReplaceNew:
		return []rowKey{{VersionID(c.id, c.repRec), c.repAt}}
	}
	return nil
}

type sim struct {
	rng   *rand.Rand
	w     *world
	msgs  []msg
	cases []idCase
	now   int64
}

func (s *sim) produce(o Op, at int64) int {
	return s.produceOn(o, at, s.rng.IntN(2))
}

func (s *sim) produceOn(o Op, at int64, part int) int {
	n := len(s.msgs)
	o.Recorded = at
	s.msgs = append(s.msgs, msg{Op: o, n: n, part: part})
	return n
}

// replace makes the replace scenarios' messages: the ops by id of one id
// on one partition (keyed by id), the submit on either.
func (s *sim) replace(c *idCase, sub Op, t0 int64) {
	name, part := sub.Name, s.rng.IntN(2)
	if c.kind != scReplaceNew {
		c.submit = s.produce(sub, t0)
		t0 += 1 + s.rng.Int64N(20_000)
	}
	c.repRec, c.repAt = t0, c.to
	if s.rng.IntN(3) == 0 {
		c.repAt = c.due // same due time: the rows must not be confused
	}
	rep := Op{ID: c.id, Name: name, Kind: Replace, At: c.repAt}
	switch {
	case c.kind == scReplaceCancel:
		cancel := Op{ID: c.id, Name: name, Kind: CancelID}
		at := t0 + s.rng.Int64N(10_000) - 5_000
		if at == t0 {
			at++
		}
		c.cancel = s.produceOn(cancel, at, part)
		c.cancelRec = at
	case s.rng.IntN(3) == 0:
		c.to = c.repAt + (1+s.rng.Int64N(100))*1000
		// on either partition: the client keys a replace by its business key
		c.res = s.produce(Op{ID: c.id, Name: name, Kind: Reschedule, At: c.to}, t0+1+s.rng.Int64N(10_000))
	}
	c.rep = s.produceOn(rep, t0, part)
}

// generate makes the ids' messages, recorded over the first minutes.
func (s *sim) generate(ids int) {
	start := s.now
	at := func(lo, hi time.Duration) int64 {
		return start + lo.Milliseconds() + s.rng.Int64N((hi-lo).Milliseconds()+1)
	}
	for k := range ids {
		c := idCase{kind: s.rng.IntN(scenarios), id: uint64(k + 1), submit: -1, res: -1, cancel: -1, rep: -1}
		c.due = start + time.Hour.Milliseconds() + s.rng.Int64N(1000)*1000
		c.to = c.due + (1+s.rng.Int64N(100))*1000
		name := fmt.Sprint("t", c.id)
		sub := Op{ID: c.id, Name: name, Kind: Submit, At: c.due}
		t0 := at(0, 2*time.Minute)
		switch c.kind {
		case scPlain:
			c.submit = s.produce(sub, t0)
		case scCancelAt:
			c.submit = s.produce(sub, t0)
			s.produce(Op{ID: c.id, Name: name, Kind: CancelAt, At: c.due}, t0+s.rng.Int64N(20000)-10000)
		case scCancelID:
			c.submit = s.produce(sub, t0)
			c.cancelRec = t0 + s.rng.Int64N(20000) - 10000
			c.cancel = s.produce(Op{ID: c.id, Name: name, Kind: CancelID}, c.cancelRec)
		case scCancelFirst:
			c.cancelRec = t0
			c.cancel = s.produce(Op{ID: c.id, Name: name, Kind: CancelID}, t0)
			c.submit = s.produce(sub, t0+(time.Minute+time.Duration(s.rng.IntN(60))*time.Second).Milliseconds())
		case scReuse:
			// the cancel and the submit on either partition, the submit
			// within the block or up to a minute after its end
			c.cancelRec = t0
			c.cancel = s.produce(Op{ID: c.id, Name: name, Kind: CancelID}, t0)
			c.submit = s.produce(sub, t0+(block-time.Minute+time.Duration(s.rng.IntN(120))*time.Second).Milliseconds())
		case scResched:
			c.submit = s.produce(sub, t0)
			c.res = s.produce(Op{ID: c.id, Name: name, Kind: Reschedule, At: c.to}, t0+s.rng.Int64N(20000)-10000)
		case scStale:
			c.res = s.produce(Op{ID: c.id, Name: name, Kind: Reschedule, At: c.to}, t0)
			c.submit = s.produce(sub, t0+(grace+margin+time.Duration(s.rng.IntN(60))*time.Second).Milliseconds())
		case scGhost:
			c.res = s.produce(Op{ID: c.id, Name: name, Kind: Reschedule, At: c.to}, t0)
		case scSeries:
			c.due = t0 + s.rng.Int64N(60_000)
			c.submit = s.produce(Op{ID: c.id, Name: name, Kind: Submit, At: c.due}, t0)
			s.w.series[c.id] = c.due
			if s.rng.IntN(2) == 0 {
				c.cancelRec = t0 + s.rng.Int64N(90_000)
				c.cancel = s.produce(Op{ID: c.id, Name: name, Kind: CancelID}, c.cancelRec)
			}
		case scReplace, scReplaceNew, scReplaceCancel:
			s.replace(&c, sub, t0)
		}
		if c.submit >= 0 {
			c.submitRec = s.msgs[c.submit].Recorded
		}
		s.cases = append(s.cases, c)
	}
}

// run handles the partitions until every message is handled and no batch
// waits, in random steps of time, batch sizes, crashes and re-reads.
func (s *sim) run() {
	var queue [2][]msg
	byTime := slices.Clone(s.msgs)
	slices.SortStableFunc(byTime, func(a, b msg) int { return int(a.Recorded - b.Recorded) })
	for _, m := range byTime {
		queue[m.part] = append(queue[m.part], m)
	}
	var size [2]int
	horizon := s.now + (10 * time.Minute).Milliseconds()
	for len(queue[0])+len(queue[1]) > 0 || s.now < horizon {
		s.now += s.rng.Int64N(3000)
		mark := s.now // the ingest watermark: every message recorded before it is handled
		for _, q := range queue {
			if len(q) > 0 {
				mark = min(mark, q[0].Recorded)
			}
		}
		s.w.scan(s.now, mark, s.rng)
		p := s.rng.IntN(2)
		q := queue[p]
		if len(q) == 0 || q[0].Recorded > s.now {
			continue
		}
		if size[p] == 0 { // a new batch: what is there, up to 3
			size[p] = 1
			for size[p] < min(3, len(q)) && q[size[p]].Recorded <= s.now {
				size[p]++
			}
		}
		crash := -1
		if s.rng.IntN(4) == 0 {
			crash = 1 + s.rng.IntN(5)
		}
		if !s.w.handle(q[:size[p]], s.now, crash) || s.rng.IntN(5) == 0 {
			continue // a crash, or the commit is lost: read again
		}
		queue[p], size[p] = q[size[p]:], 0
	}
}

func (s *sim) check() []string {
	var errs []string
	failed := func(n int) bool { _, ok := s.w.failed[n]; return n >= 0 && ok }
	for _, c := range s.cases {
		errs = append(errs, s.checkReuse(c)...)
		if c.kind == scSeries {
			errs = append(errs, s.checkSeries(c)...)
			continue
		}
		var got []rowKey
		if c.rep >= 0 {
			got = s.w.delivered(c.id, c.repRec)
		} else {
			got = s.w.delivered(c.id)
		}
		want := c.expect(failed(c.res))
		if !slices.Equal(got, want) {
			errs = append(errs, fmt.Sprintf("id %d (scenario %d): delivered %v, want %v", c.id, c.kind, got, want))
		}
		// A replace fails only when its id was cancelled by id before it.
		if failed(c.rep) && (c.kind != scReplaceCancel || s.msgs[c.cancel].Recorded > c.repRec) {
			errs = append(errs, fmt.Sprintf("id %d (scenario %d): replace failed: %s", c.id, c.kind, s.w.failed[c.rep]))
		}
		if c.res < 0 {
			continue
		}
		// A reschedule fails when, decided at least its grace after its
		// record time, it finds no task recorded within the grace; never
		// for a task written well within its grace; and a failed one
		// moves no task.
		written, ok := s.w.written[c.id]
		age := s.w.decided[c.res] - s.msgs[c.res].Recorded
		graceEnd := s.msgs[c.res].Recorded + grace.Milliseconds()
		switch {
		case c.kind == scGhost && !failed(c.res):
			errs = append(errs, fmt.Sprintf("id %d: reschedule of an id never submitted not reported (decided %v old)", c.id, time.Duration(age)*time.Millisecond))
		case !ok && age >= grace.Milliseconds() && !failed(c.res):
			errs = append(errs, fmt.Sprintf("id %d (scenario %d): reschedule of an unknown id decided %v old not failed", c.id, c.kind, time.Duration(age)*time.Millisecond))
		case ok && failed(c.res) && written < graceEnd-margin.Milliseconds():
			errs = append(errs, fmt.Sprintf("id %d (scenario %d): reschedule failed though its task came within its grace (written %d, grace end %d): %s", c.id, c.kind, written, graceEnd, s.w.failed[c.res]))
		}
	}
	return errs
}

// checkReuse: a submit fails only when it reuses an id cancelled by id
// alone (recorded after the cancel, before the block's end), and then
// whenever ingest first decided it after the cancel's cell was written;
// one recorded before the cancel (the task the cancel overtook) never
// fails.
func (s *sim) checkReuse(c idCase) []string {
	if c.submit < 0 {
		return nil
	}
	text, failed := s.w.failed[c.submit]
	reuse := c.cancelRec != 0 && c.submitRec > c.cancelRec && c.submitRec < c.cancelRec+block.Milliseconds()
	written, ok := s.w.cancelled[c.id]
	switch {
	case failed && !reuse:
		return []string{fmt.Sprintf("id %d (scenario %d): submit recorded at %d failed (cancel by id at %d): %s", c.id, c.kind, c.submitRec, c.cancelRec, text)}
	case reuse && !failed && ok && s.w.first[c.submit] > written:
		return []string{fmt.Sprintf("id %d (scenario %d): submit reusing an id cancelled by id (cancel at %d, submit at %d) decided after the cancel not refused", c.id, c.kind, c.cancelRec, c.submitRec)}
	case failed && !strings.HasPrefix(text, "id cancelled: submit of delay-id"):
		return []string{fmt.Sprintf("id %d: submit refused for another reason: %s", c.id, text)}
	}
	return nil
}

// checkSeries: a series is delivered in full, in order, each occurrence
// once (again only after a scanner crash), unless cancelled by id: then it
// is a prefix of that, and nothing is delivered after the cancel's batch
// was done.
func (s *sim) checkSeries(c idCase) []string {
	var errs []string
	var dues []int64
	for _, d := range s.w.sent[c.id] {
		if c.cancel >= 0 && d.when > s.w.decided[c.cancel] {
			errs = append(errs, fmt.Sprintf("series %d: occurrence %d delivered at %d, after its cancel at %d", c.id, d.at, d.when, s.w.decided[c.cancel]))
		}
		if !slices.Contains(dues, d.at) {
			dues = append(dues, d.at)
		}
	}
	for k, at := range dues {
		if at != c.due+int64(k)*seriesEvery {
			errs = append(errs, fmt.Sprintf("series %d: delivered %v, want a prefix of the series from %d", c.id, dues, c.due))
			break
		}
	}
	if c.cancel < 0 && len(dues) != seriesCount {
		errs = append(errs, fmt.Sprintf("series %d: delivered %v, want %d occurrences", c.id, dues, seriesCount))
	}
	return errs
}

// TestModel runs 5,000 seeded interleavings of 8 ids each (about 0.4 s,
// 2 s with -race); a failure names its seed, which
// `go test -run TestModel -model.seed N` replays first.
func TestModel(t *testing.T) {
	modeltest.Run(t, 5000, func(seed uint64) error {
		s := &sim{
			rng: rand.New(rand.NewPCG(seed, 0)),
			w: &world{rows: map[rowKey]row{}, index: map[rowKey]bool{}, ids: map[uint64]State{},
				flags: map[uint64]bool{}, failed: map[int]string{}, decided: map[int]int64{}, written: map[uint64]int64{},
				series: map[uint64]int64{}, sent: map[uint64][]sent{}, checks: map[uint64]int{},
				cancelled: map[uint64]int{}, first: map[int]int{}},
			now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		}
		s.generate(8)
		s.run()
		if errs := s.check(); len(errs) > 0 {
			return fmt.Errorf("\n%s", errs)
		}
		return nil
	})
}

package taskstate

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// CheckID returns the id of the check row of the reschedule of the name
// whose id is id recorded at recorded: a row ingest stores, due when the
// reschedule's grace ends, that the scanner sends to the failed topic
// unless a task of the id came in time and marked it (Plan.Checks).
func CheckID(id uint64, recorded int64) uint64 { return rowHash(id, recorded, 'c') }

// VersionID returns the id of the task row of the replace of the name
// whose id is id, recorded at recorded (unix ms): a 63-bit hash, so that
// the new task never shares a row with the task it replaces (same due
// time or not) and a late submit of the old one cannot overwrite it. A
// re-read of the replace computes the same id.
func VersionID(id uint64, recorded int64) uint64 { return rowHash(id, recorded, 'v') }

func rowHash(id uint64, recorded int64, tag byte) uint64 {
	var b [17]byte
	binary.BigEndian.PutUint64(b[:8], id)
	binary.BigEndian.PutUint64(b[8:16], uint64(recorded))
	b[16] = tag
	h := fnv.New64a()
	h.Write(b[:])
	return h.Sum64() & (1<<63 - 1)
}

// row returns the id of the task row the op writes.
func (o Op) row() uint64 {
	if o.Kind == Replace {
		return VersionID(o.ID, o.Recorded)
	}
	return o.ID
}

// view is the id's state as its submits and reschedules see it once the
// replaces are decided.
type view struct {
	st  State
	row uint64 // the current task row's id
	src int    // the batch's replace whose task is the current one, or -1
}

// replaces decides the replaces of an id not cancelled, and the submits
// and reschedules they supersede (recorded before the latest replace),
// and returns the view and the ops left to decide. The latest replace by
// record time wins: it marks the current task row (and a reschedule's
// copy) and becomes the current one; an older replace, or a submit
// recorded before it, is marked and not indexed; an older reschedule does
// nothing.
func (p *Plan) replaces(ops []Op, id uint64, st State, idx []int, cfg Config) (view, []int) {
	v := view{st: st, row: st.Row(id), src: -1}
	last := st.replaced()
	if last == 0 {
		return v, idx
	}
	cur := -1 // the latest replace, when this batch has it and it is not carried out yet
	if st.Version != last {
		for _, i := range idx {
			if ops[i].Kind == Replace && ops[i].Recorded == last {
				cur = i
			}
		}
	}
	if cur >= 0 {
		o := ops[cur]
		p.supersede(id, o.Name, st)
		p.Ats = append(p.Ats, Write{ID: id, Name: o.Name, At: o.At, Version: last})
		v.st.At, v.st.Version = o.At, last
		v.row, v.src = o.row(), cur
	}
	var rest []int
	for _, i := range idx {
		switch o := ops[i]; {
		case i == cur, o.Kind == Replace && o.Recorded == last:
			// the current replace, or a re-read of the one carried out
		case o.Kind == Replace, o.Kind == Submit && o.Recorded <= last:
			if o.row() != v.row || o.At != v.st.At {
				p.Skip[i] = true
				p.Markers = append(p.Markers, Mark{o.row(), o.Name, o.At})
			}
		case o.Kind == Reschedule && (o.Recorded < last || cur < 0 && st.Version != last):
			// superseded by the replace, or waiting in d:r for the
			// replace, written and not carried out yet, to take it
		default:
			rest = append(rest, i)
		}
	}
	switch {
	case v.st.MoveRecorded < last && v.st.Moving != 0:
		v.st.Moving = 0 // a reschedule of the task replaced
		p.Ats = append(p.Ats, Write{ID: id, Moving: -1})
	case cur >= 0 && v.st.moving() != 0 && v.st.Moving != v.st.At && !slices.ContainsFunc(rest, func(i int) bool { return ops[i].Kind == Reschedule }):
		// A reschedule recorded after the replace was read first: the
		// replace's task goes to its time.
		p.Skip[cur] = true
		p.moves = append(p.moves, Move{ID: id, Row: v.row, Name: ops[cur].Name, From: v.st.At, To: v.st.Moving, Src: cur,
			check: checkOf(id, ops[cur].Name, v.st.MoveRecorded, cfg)})
	}
	return v, rest
}

// supersede marks the current task row of an id and the copy of its
// pending reschedule.
func (p *Plan) supersede(id uint64, name string, st State) {
	for _, at := range []int64{st.Due(), st.Moving} {
		if at > 0 {
			p.Markers = append(p.Markers, Mark{st.Row(id), name, at})
		}
	}
}

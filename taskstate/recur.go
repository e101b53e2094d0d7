package taskstate

// Occurrence is the next occurrence of a recurring task that the scanner
// plans (payload.NextOccurrence computes it from the current one).
type Occurrence struct {
	ID   uint64
	Name string
	At   int64 // its due time, unix ms
}

// Track returns the id-row writes that record each next occurrence as its
// name's current due time (d:a). The scanner writes them after storing
// and indexing the occurrences, then reads the id rows back (Stopped).
func Track(next []Occurrence) []Write {
	out := make([]Write, len(next))
	for i, o := range next {
		out[i] = Write{ID: o.ID, Name: o.Name, At: o.At}
	}
	return out
}

// Stopped returns the cancel markers for the next occurrences whose names
// are cancelled by id alone, or replaced by a replace recorded after the
// series' submit (states read back after Track's writes, aligned with
// next). Ingest's cancel by id writes d:x (a replace d:u) before it reads
// d:a, and the scanner writes d:a before it reads d:x, so one of the two
// sees the other and the occurrence is marked whichever comes first.
func Stopped(next []Occurrence, states []State) []Mark {
	var out []Mark
	for i, st := range states {
		if st.Over() {
			out = append(out, Mark(next[i]))
		}
	}
	return out
}

// Over reports whether the name's series is over: cancelled by id alone,
// or replaced by a replace recorded after its submit. The scanner
// delivers no occurrence of such a name.
func (s State) Over() bool {
	rep := s.replaced()
	return s.Cancelled || (rep != 0 && rep >= s.SubmitRecorded)
}

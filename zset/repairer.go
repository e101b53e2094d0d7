package zset

// Repairer is the index as the repair of a lost index uses it (package
// repair): it asks what is pending and due and what the watermarks say,
// and writes entries and op flags again.
type Repairer struct {
	*Maintenance
	*Writer
	*OpFlags
	*Reader
	*Watermarks
}

// Repairer returns the role of a repair.
func (ix *Index) Repairer() Repairer {
	return Repairer{ix.Maintenance(), ix.Writer(), ix.OpFlags(), ix.Reader(), ix.Watermarks()}
}

// Key is the zset of e (every role knows it; this picks one).
func (r Repairer) Key(e Entry) string { return r.Writer.Key(e) }

package daemon

import "github.com/delayq/delayq/zset"

// The roles of the zset index each stage takes (see zset.Index): ingest
// writes entries and op flags, the dispatcher lists what is due and keeps
// the segments, the scanner reads, removes and writes the next occurrences
// of recurring tasks.
type (
	ingestIndex struct {
		*zset.Writer
		*zset.OpFlags
	}
	dispatchIndex struct {
		*zset.Reader
		*zset.Maintenance
	}
	scanIndex struct {
		*zset.Reader
		*zset.Writer
	}
)

package ingest

import "github.com/delayq/delayq/zset"

// roles returns the roles of ix that the ingest takes, as the daemon wires
// them.
func roles(ix *zset.Index) Index {
	return struct {
		*zset.Writer
		*zset.OpFlags
	}{ix.Writer(), ix.OpFlags()}
}

package scanner

import "github.com/delayq/delayq/zset"

// roles returns the roles of ix that the scanner takes, as the daemon wires
// them.
func roles(ix *zset.Index) Index {
	return struct {
		*zset.Reader
		*zset.Writer
	}{ix.Reader(), ix.Writer()}
}

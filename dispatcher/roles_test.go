package dispatcher

import "github.com/delayq/delayq/zset"

// roles returns the roles of ix that the dispatcher takes, as the daemon wires
// them.
func roles(ix *zset.Index) Index {
	return struct {
		*zset.Reader
		*zset.Maintenance
	}{ix.Reader(), ix.Maintenance()}
}

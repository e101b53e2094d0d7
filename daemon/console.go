package daemon

import (
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/console"
	"github.com/delayq/delayq/zset"
)

// newConsole builds the web console when cfg.Console is on (nil when off).
// Its figures come from the daemon's registry; delayq_dependency_up is the
// daemon's own (health.go), so the console registers nothing.
func (d *Daemon) newConsole() error {
	if !d.cfg.Console {
		return nil
	}
	c, err := console.New(console.Config{
		Write: d.cfg.ConsoleWrite, Token: d.cfg.ConsoleToken,
		Gatherer: d.reg, Logger: d.log,
	})
	if err != nil {
		return err
	}
	d.console = c
	return nil
}

// attachConsole hands the console the backends the roles use and the
// dependency probes, once they answered: until then its API says delayd is
// starting.
func (d *Daemon) attachConsole(ix *zset.Index, store Store, w *kafka.Writer, h *health) {
	if d.console == nil {
		return
	}
	d.console.Attach(console.Backends{
		Index: ix, Store: store, Canceller: console.NewCanceller(w),
		Failed: console.NewFailedTopic(d.cfg.Brokers, d.auth, w),
		Health: h,
	})
}

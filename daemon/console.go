package daemon

import (
	"net"
	"slices"

	"github.com/delayq/delayq/console"
	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/zset"
)

// newConsole builds the web console when cfg.Console is on (nil when off).
// Its figures come from the daemon's registry; delayq_dependency_up is the
// daemon's own (health.go), so the console registers nothing.
//
// On an HTTP address other than loopback the console shows task payloads
// and delay-failed to whoever reaches the port, so it needs the token
// there: without one it is off, and one WARN line says how to turn it on.
func (d *Daemon) newConsole() error {
	if !d.cfg.Console {
		return nil
	}
	if d.cfg.ConsoleToken == "" && !httpserve.Loopback(d.cfg.HTTP) {
		d.log.Warn("console off: --http is not a loopback address and no console token is set",
			"http", d.cfg.HTTP, "enable", "set DELAYQ_CONSOLE_TOKEN (at least 16 bytes); every console read then needs it")
		return nil
	}
	hosts := d.cfg.ConsoleHosts
	if host, _, err := net.SplitHostPort(d.cfg.HTTP); err == nil && host != "" {
		hosts = append(slices.Clone(hosts), host) // the name delayd listens on
	}
	c, err := console.New(console.Config{
		Write: d.cfg.ConsoleWrite, Token: d.cfg.ConsoleToken, Hosts: hosts,
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
func (d *Daemon) attachConsole(ix *zset.Maintenance, store Store, w console.Writer, h *health) {
	if d.console == nil {
		return
	}
	d.console.Attach(console.Backends{
		Index: ix, Store: store, Canceller: console.NewCanceller(w),
		Failed: console.NewFailedTopic(d.cfg.Brokers, d.auth, w),
		Health: h, Topics: d.topics,
	})
}

// Package redlock is the dispatcher's tick election on Redis: Locker
// satisfies dispatcher.Locker with a redsync mutex per lock name, tried
// once, held until it expires and never released early.
//
// It lives apart from package dispatcher so that the dispatcher depends on
// the interface it declares, not on redsync, and tests can elect with
// anything. redsync has no fencing token: two instances can rarely both
// win a tick; the dispatcher's scan tasks are harmless when duplicated,
// and the dispatcher fences its writes by the tick's turn itself.
package redlock

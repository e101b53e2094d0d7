// Package metric defines the Prometheus collectors that more than one delayq
// package updates (store call latency and errors, failed tasks), so their
// names, help and labels are written once, and Register, which lets several
// components register on one registry and share a collector of the same
// description instead of failing.
package metric

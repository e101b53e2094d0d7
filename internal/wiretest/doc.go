// Package wiretest loads testdata/wire/vectors.json, the wire cases
// every client (Go, Java, Python) and payload.Decode are tested against
// (format: testdata/wire/README.md), for the Go tests that read it: the
// client's (the module root) and payload's. It is for tests only.
package wiretest

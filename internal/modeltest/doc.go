// Package modeltest runs the seeded model tests of the pure rules
// (taskstate, scanner/schedule): many random cases from a first seed, the
// first failing case named by its seed so that `-model.seed N` replays it
// first.
package modeltest

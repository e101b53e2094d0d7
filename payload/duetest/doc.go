// Package duetest holds the table of due times and delays that every front
// door of delayq must judge alike: the wire decoder (payload.Decode), the
// HTTP API, the Go client and delayctl. Each front door's own test feeds
// Cases to it and expects each case's verdict, so that one refusing what
// another accepts, or for another reason, fails a test. The table is
// testdata/cases.json; the rules are payload's (ParseDueTime, ParseDelay,
// CheckDelay, CheckAhead).
//
// The cases hold under any clock after 2026-12: their times are far in
// the past or far ahead, and their delays clear of the maximum delay
// (720h, delayd's default) by more than any test's run.
package duetest

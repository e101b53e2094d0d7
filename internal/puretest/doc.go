// Package puretest holds the checks that keep a package of pure rules
// pure (taskstate, scanner/schedule, tenant, topics): what it may depend
// on, and that its source never reads the clock, sleeps or starts a
// goroutine. Each check runs on the package in the test's working
// directory, which is the package under test.
package puretest

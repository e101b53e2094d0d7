// Package version says which delayq a binary is. The version is the one
// set at link time (-ldflags "-X github.com/delayq/delayq/internal/version.Version=v1.2.3",
// as `make dist` and `make image` do), else the module version `go install
// …@v1.2.3` records, else "devel". The commit is the one set at link time
// (Revision), else the build info's vcs.revision; the Go version is the
// build info's (debug.ReadBuildInfo).
//
// delayd and delayctl print it for --version, delayd exports it as the
// delayq_build_info gauge, and the Go client names itself with it to the
// Kafka brokers (the client id). It imports the standard library only, as
// the Go client must.
package version

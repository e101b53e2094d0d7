package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version and Revision are set at link time with -ldflags -X (make sets
// both: a build without VCS stamping, -buildvcs=false or a Docker context
// without .git, still knows its commit). Empty: the build info's.
var (
	Version  = ""
	Revision = ""
)

// Info is what a binary knows of its build.
type Info struct {
	Version   string // v1.2.3, a module version, or "devel"
	Revision  string // the VCS commit, with "-dirty" for a modified tree; "unknown" without VCS info
	GoVersion string // the toolchain that built the binary
}

// Get returns the running binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	info := fromBuildInfo(Version, bi)
	if Revision != "" {
		info.Revision = Revision
	}
	return info
}

// modulePath is delayq's module: a program that imports the Go client is
// another module, whose version and commit are not delayq's.
const modulePath = "github.com/delayq/delayq"

func fromBuildInfo(linked string, bi *debug.BuildInfo) Info {
	info := Info{Version: linked, Revision: "unknown", GoVersion: runtime.Version()}
	if bi == nil {
		bi = &debug.BuildInfo{GoVersion: info.GoVersion}
	}
	info.GoVersion = bi.GoVersion
	mod, ours := bi.Main, bi.Main.Path == modulePath || bi.Main.Path == ""
	if !ours {
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				mod = *d
			}
		}
	}
	if info.Version == "" && mod.Path == modulePath && mod.Version != "" && mod.Version != "(devel)" {
		info.Version = mod.Version // go install github.com/delayq/delayq/cmd/delayd@v1.2.3, or a dependency
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch {
		case !ours:
		case s.Key == "vcs.revision":
			info.Revision = s.Value
		case s.Key == "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.Revision != "unknown" {
		info.Revision += "-dirty"
	}
	return info
}

// String is what --version prints after the program name:
// "v1.2.3 (commit 0123abc…, go1.26.8)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, i.Revision, i.GoVersion)
}

// ClientID is how a delayq program names itself to Kafka brokers
// (for example "delayq-go/v1.2.3"): brokers log it and quotas can key on it.
func (i Info) ClientID(program string) string { return program + "/" + i.Version }

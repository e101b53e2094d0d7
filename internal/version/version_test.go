package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   Info
	}{
		{name: "linked version and clean tree", linked: "v1.2.3",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123abc", "false")},
			want: Info{Version: "v1.2.3", Revision: "0123abc", GoVersion: "go1.26.8"}},
		{name: "dirty tree", linked: "v1.2.3",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Settings: vcs("0123abc", "true")},
			want: Info{Version: "v1.2.3", Revision: "0123abc-dirty", GoVersion: "go1.26.8"}},
		{name: "go install module@version", bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "v0.2.0"}},
			want: Info{Version: "v0.2.0", Revision: "unknown", GoVersion: "go1.26.8"}},
		{name: "go build without version", bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123abc", "false")},
			want: Info{Version: "devel", Revision: "0123abc", GoVersion: "go1.26.8"}},
		{name: "a program that imports the client", bi: &debug.BuildInfo{GoVersion: "go1.26.8",
			Main: debug.Module{Path: "example.com/shop", Version: "v9.0.0"}, Deps: []*debug.Module{{Path: modulePath, Version: "v0.3.0"}}, Settings: vcs("fedcba9", "true")},
			want: Info{Version: "v0.3.0", Revision: "unknown", GoVersion: "go1.26.8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(tc.linked, tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := (Info{Version: "v1.2.3", Revision: "0123abc", GoVersion: "go1.26.8"}).String(); got != "v1.2.3 (commit 0123abc, go1.26.8)" {
		t.Errorf("String() = %q", got)
	}
}

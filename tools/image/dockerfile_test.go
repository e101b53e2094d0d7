package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFinalStage(t *testing.T) {
	const head = "FROM golang:1.26 AS build\nRUN go build \\\n  ./cmd/delayd\n\nFROM scratch\n" + rootfsCopy + "\n"
	tests := []struct {
		name, final, wantErr string
	}{
		{name: "ok", final: "ENV PATH=/usr/local/bin\n# a comment\nUSER 65532:65532\nEXPOSE 9464 8080/tcp\nENTRYPOINT [\"/usr/local/bin/delayd\"]\n"},
		{name: "shell form needs a shell", final: "ENTRYPOINT /usr/local/bin/delayd\n", wantErr: "exec form"},
		{name: "RUN needs a shell", final: "RUN mkdir /data\n", wantErr: "not supported"},
		{name: "another copy", final: "COPY LICENSE /\n", wantErr: "copies exactly"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "Dockerfile")
			if err := os.WriteFile(path, []byte(head+tc.final), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := finalStage(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.User != "65532:65532" || len(c.ExposedPorts) != 2 || c.Entrypoint[0] != "/usr/local/bin/delayd" || c.Env[0] != "PATH=/usr/local/bin" {
				t.Errorf("config %+v", c)
			}
		})
	}
	if _, err := finalStage("../../Dockerfile"); err != nil {
		t.Errorf("the repository's Dockerfile: %v", err)
	}
}

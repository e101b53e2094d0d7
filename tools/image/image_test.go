package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestMakeImage runs `make image` as a user would, then checks both
// outputs the way a runtime reads them: the OCI layout (index, manifest,
// config, blobs by digest) and the docker-archive. It unpacks the layer
// and runs the image's delayd and delayctl with --version: static
// binaries, so they run from the unpacked tree as in the container
// (podman run needs setrlimit, which this sandbox refuses). It also runs
// the Dockerfile's build stage as a shell would and compares the files.
func TestMakeImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image is linux/" + runtime.GOARCH + "; its binaries run only on Linux")
	}
	const version = "v0.0.0-imagetest"
	out := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "-C", "../..", "image", "VERSION="+version, "REVISION=0123abc", "IMAGE_DIR="+out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, b)
	}
	t.Logf("make image:\n%s", b)

	layout := filepath.Join(out, "oci")
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	readJSON(t, filepath.Join(layout, "index.json"), nil, &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("index.json manifests %+v, want one tagged %s", index.Manifests, version)
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	readJSON(t, layout, &index.Manifests[0], &manifest)
	var config struct {
		Architecture string      `json:"architecture"`
		OS           string      `json:"os"`
		Config       imageConfig `json:"config"`
		RootFS       struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	readJSON(t, layout, &manifest.Config, &config)
	want, err := finalStage("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if config.OS != "linux" || config.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", config.OS, config.Architecture)
	}
	if c := config.Config; c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/delayd"}) ||
		!slices.Equal(c.Env, want.Env) || len(c.ExposedPorts) != len(want.ExposedPorts) {
		t.Errorf("image config %+v, want the Dockerfile's %+v, user 65532 (the manifests' runAsUser)", c, want)
	}
	if len(manifest.Layers) != 1 || len(config.RootFS.DiffIDs) != 1 {
		t.Fatalf("layers %v, diff ids %v: want one", manifest.Layers, config.RootFS.DiffIDs)
	}
	gz := readBlob(t, layout, manifest.Layers[0])
	raw, err := gunzip(gz)
	if err != nil {
		t.Fatal(err)
	}
	if digest(raw) != config.RootFS.DiffIDs[0] {
		t.Errorf("layer diff id %s, config says %s", digest(raw), config.RootFS.DiffIDs[0])
	}
	root := t.TempDir()
	files := untar(t, raw, root)
	for _, f := range []string{"usr/local/bin/delayd", "usr/local/bin/delayctl", "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group"} {
		if !files[f] {
			t.Errorf("image lacks /%s (has %v)", f, files)
		}
	}
	if p, _ := os.ReadFile(filepath.Join(root, "etc/passwd")); !strings.Contains(string(p), ":65532:65532:") {
		t.Errorf("/etc/passwd does not name user 65532:\n%s", p)
	}
	for _, bin := range []string{"delayd", "delayctl"} {
		path := filepath.Join(root, "usr/local/bin", bin)
		if f, err := elf.Open(path); err != nil {
			t.Errorf("%s: %v", bin, err)
		} else {
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s is dynamically linked: the image has no libc", bin)
				}
			}
			f.Close()
		}
		got, err := exec.Command(path, "--version").CombinedOutput()
		t.Logf("image's %s --version: %s", bin, got)
		if wantOut := bin + " " + version + " (commit 0123abc, " + runtime.Version() + ")\n"; err != nil || string(got) != wantOut {
			t.Errorf("image's %s --version = %q (%v), want %q", bin, got, err, wantOut)
		}
	}

	// The Dockerfile's build stage, run as a shell runs it, lays out the
	// same files (the builder image has the CA bundle where Debian does).
	stage := dockerfileRun(t)
	staged := t.TempDir()
	run := exec.Command("sh", "-c", strings.ReplaceAll(stage, "/rootfs/", staged+"/"))
	run.Dir = "../.."
	run.Env = append(os.Environ(), "VERSION="+version, "REVISION=0123abc")
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build stage: %v\n%s", err, b)
	}
	stagedFiles := map[string]bool{}
	filepath.WalkDir(staged, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(staged, p)
			stagedFiles[filepath.ToSlash(rel)] = true
			if !strings.HasPrefix(rel, "usr") {
				a, _ := os.ReadFile(p)
				b, _ := os.ReadFile(filepath.Join(root, rel))
				if !bytes.Equal(a, b) {
					t.Errorf("/%s differs between the image and the Dockerfile's build stage", rel)
				}
			}
		}
		return err
	})
	if !maps.Equal(files, stagedFiles) {
		t.Errorf("image files %v, the Dockerfile's build stage lays out %v", files, stagedFiles)
	}

	// The docker-archive holds the same configuration and layer.
	archive := filepath.Join(out, "delayd-"+version+"-"+runtime.GOARCH+".tar")
	ab, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(ab))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		entries[h.Name], _ = io.ReadAll(tr)
	}
	var dm []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(entries["manifest.json"], &dm); err != nil || len(dm) != 1 {
		t.Fatalf("docker-archive manifest.json: %v %s", err, entries["manifest.json"])
	}
	if !slices.Equal(dm[0].RepoTags, []string{"delayq/delayd:" + version, "delayq/delayd:latest"}) {
		t.Errorf("docker-archive tags %v", dm[0].RepoTags)
	}
	if digest(entries[dm[0].Config]) != manifest.Config.Digest || len(dm[0].Layers) != 1 || digest(entries[dm[0].Layers[0]]) != config.RootFS.DiffIDs[0] {
		t.Errorf("docker-archive config or layer differs from the OCI layout's")
	}
}

// dockerfileRun returns the Dockerfile's RUN instruction that lays out
// /rootfs/, as one shell command.
func dockerfileRun(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "/rootfs/") {
			return strings.TrimPrefix(l, "RUN ")
		}
	}
	t.Fatal("Dockerfile: no RUN laying out /rootfs/")
	return ""
}

// readBlob reads the blob d names from the layout and checks its digest
// and size.
func readBlob(t *testing.T, layout string, d descriptor) []byte {
	t.Helper()
	alg, hex, _ := strings.Cut(d.Digest, ":")
	b, err := os.ReadFile(filepath.Join(layout, "blobs", alg, hex))
	if err != nil {
		t.Fatal(err)
	}
	if digest(b) != d.Digest || int64(len(b)) != d.Size {
		t.Fatalf("blob %s: digest %s, size %d (descriptor says %d)", d.Digest, digest(b), len(b), d.Size)
	}
	return b
}

// readJSON decodes a file (d nil) or the blob d names.
func readJSON(t *testing.T, path string, d *descriptor, v any) {
	t.Helper()
	var b []byte
	if d == nil {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	} else {
		b = readBlob(t, path, *d)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// untar extracts the layer into dir and returns the regular files' names.
func untar(t *testing.T, raw []byte, dir string) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		} else if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d, want root: the user must not be able to change the binaries", h.Name, h.Uid, h.Gid)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("layer entry %q leaves the root", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			files[h.Name] = true
			b, _ := io.ReadAll(tr)
			if err := os.WriteFile(p, b, os.FileMode(h.Mode)); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("unexpected layer entry %s (type %c)", h.Name, h.Typeflag)
		}
	}
}

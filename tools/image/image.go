package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// spec is what to build.
type spec struct {
	Version, Revision string
	Repository        string // delayq/delayd
	Arch              string // GOARCH
	Dockerfile        string
	Created           time.Time
}

// result is what build wrote.
type result struct {
	Layout    string // the OCI layout directory
	Archive   string // the docker-archive tar
	Manifest  string // digest of the OCI manifest
	LayerSize int64  // compressed
}

// caFile is the CA bundle of Debian's ca-certificates, where the
// golang image has it and Go's crypto/x509 looks first.
const caFile = "/etc/ssl/certs/ca-certificates.crt"

// Media types of the OCI image spec.
const (
	mtIndex    = "application/vnd.oci.image.index.v1+json"
	mtManifest = "application/vnd.oci.image.manifest.v1+json"
	mtConfig   = "application/vnd.oci.image.config.v1+json"
	mtLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// build compiles the binaries and writes the image into out.
func build(s spec, out string) (result, error) {
	cfg, err := finalStage(s.Dockerfile)
	if err != nil {
		return result{}, err
	}
	tmp, err := os.MkdirTemp("", "delayq-image-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(tmp)
	if err := compile(s, tmp); err != nil {
		return result{}, err
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return result{}, fmt.Errorf("CA bundle (Debian: ca-certificates): %w", err)
	}
	// The user 65532 of USER and of the manifests' runAsUser, named.
	passwd, err := os.ReadFile("deploy/image/passwd")
	if err != nil {
		return result{}, err
	}
	group, err := os.ReadFile("deploy/image/group")
	if err != nil {
		return result{}, err
	}
	files := []layerFile{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: group},
		{name: "etc/passwd", mode: 0o644, body: passwd},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: ca},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
	}
	for _, bin := range []string{"delayctl", "delayd"} {
		b, err := os.ReadFile(filepath.Join(tmp, bin))
		if err != nil {
			return result{}, err
		}
		files = append(files, layerFile{name: "usr/local/bin/" + bin, mode: 0o755, body: b})
	}
	layer, diffID, err := tarLayer(files, s.Created)
	if err != nil {
		return result{}, err
	}

	type rootfs struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	}
	type history struct {
		Created   time.Time `json:"created"`
		CreatedBy string    `json:"created_by"`
	}
	config, err := json.Marshal(struct {
		Created      time.Time   `json:"created"`
		Architecture string      `json:"architecture"`
		OS           string      `json:"os"`
		Config       imageConfig `json:"config"`
		RootFS       rootfs      `json:"rootfs"`
		History      []history   `json:"history"`
	}{
		Created: s.Created, Architecture: s.Arch, OS: "linux", Config: cfg,
		RootFS:  rootfs{Type: "layers", DiffIDs: []string{diffID}},
		History: []history{{Created: s.Created, CreatedBy: "tools/image " + s.Version + " (" + rootfsCopy + ")"}},
	})
	if err != nil {
		return result{}, err
	}
	configDesc := blob(mtConfig, config)
	layerDesc := blob(mtLayer, layer)
	manifest, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{2, mtManifest, configDesc, []descriptor{layerDesc}})
	if err != nil {
		return result{}, err
	}
	manifestDesc := blob(mtManifest, manifest)

	res := result{
		Layout:    filepath.Join(out, "oci"),
		Archive:   filepath.Join(out, fmt.Sprintf("delayd-%s-%s.tar", s.Version, s.Arch)),
		Manifest:  manifestDesc.Digest,
		LayerSize: layerDesc.Size,
	}
	if err := writeLayout(res.Layout, s, manifestDesc, map[string][]byte{
		configDesc.Digest: config, layerDesc.Digest: layer, manifestDesc.Digest: manifest,
	}); err != nil {
		return result{}, err
	}
	gunzipped, err := gunzip(layer)
	if err != nil {
		return result{}, err
	}
	if err := writeArchive(res.Archive, s, config, gunzipped, s.Created); err != nil {
		return result{}, err
	}
	return res, nil
}

// compile builds delayd and delayctl into dir as the Dockerfile's build
// stage does.
func compile(s spec, dir string) error {
	ldflags := "-s -w -X github.com/delayq/delayq/internal/version.Version=" + s.Version +
		" -X github.com/delayq/delayq/internal/version.Revision=" + s.Revision
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "timetzdata", "-ldflags", ldflags,
		"-o", dir+string(filepath.Separator), "./cmd/delayd", "./cmd/delayctl")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+s.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

type layerFile struct {
	name string // a trailing slash makes a directory
	mode int64
	body []byte
}

// tarLayer returns the gzipped tar of files, owned by root, and the digest
// of the uncompressed tar (the layer's diff id).
func tarLayer(files []layerFile, mtime time.Time) (layer []byte, diffID string, err error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.body))}
		if f.name[len(f.name)-1] == '/' {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), digest(raw.Bytes()), nil
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	_, err = out.ReadFrom(zr)
	return out.Bytes(), err
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func blob(mediaType string, b []byte) descriptor {
	return descriptor{MediaType: mediaType, Digest: digest(b), Size: int64(len(b))}
}

// writeLayout writes an OCI image layout (image-layout.md of the OCI image
// spec) holding the blobs, with the manifest tagged with the version.
func writeLayout(dir string, s spec, manifest descriptor, blobs map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return err
	}
	for d, b := range blobs {
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", d[len("sha256:"):]), b, 0o644); err != nil {
			return err
		}
	}
	manifest.Platform = &platform{Architecture: s.Arch, OS: "linux"}
	manifest.Annotations = map[string]string{
		"org.opencontainers.image.ref.name": s.Version,
		"io.containerd.image.name":          s.Repository + ":" + s.Version,
	}
	index, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}{2, mtIndex, []descriptor{manifest}})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}

// writeArchive writes the tar `docker save` writes and `docker load`
// reads: manifest.json naming the configuration, the tags and the
// uncompressed layer.
func writeArchive(path string, s spec, config, layer []byte, mtime time.Time) error {
	configName := digest(config)[len("sha256:"):] + ".json"
	layerName := digest(layer)[len("sha256:"):] + "/layer.tar"
	manifest, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{configName, []string{s.Repository + ":" + s.Version, s.Repository + ":latest"}, []string{layerName}}})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		body []byte
	}{{configName, config}, {layerName, layer}, {"manifest.json", manifest}} {
		if dir := filepath.Dir(f.name); dir != "." {
			if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}); err != nil {
				return err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.body)), ModTime: mtime}); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

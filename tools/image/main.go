// Command image builds delayq's container image without a container
// engine: it compiles static (CGO_ENABLED=0) delayd and delayctl for
// linux/<arch> with the flags of the Dockerfile's build stage, lays them
// out with the CA bundle and deploy/image's passwd and group (user 65532)
// as that stage does, takes the image configuration (USER, ENV, EXPOSE, ENTRYPOINT) from
// the Dockerfile's final stage, and writes the image twice into -out:
//
//	oci/                         an OCI image layout (skopeo, crane, podman)
//	delayd-<version>-<arch>.tar  a docker-archive (docker load, podman load)
//
// tagged delayq/delayd:<version> and :latest. `make image` runs it. Files
// carry the time of SOURCE_DATE_EPOCH (make: the commit's), so the same
// commit gives the same layer. It runs from the repository's root.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var s spec
	fs.StringVar(&s.Version, "version", "devel", "version: linked into the binaries and the image tag")
	fs.StringVar(&s.Revision, "revision", "unknown", "VCS commit linked into the binaries")
	fs.StringVar(&s.Repository, "repository", "delayq/delayd", "image repository the tags name")
	fs.StringVar(&s.Arch, "arch", runtime.GOARCH, "target architecture (GOARCH)")
	fs.StringVar(&s.Dockerfile, "dockerfile", "Dockerfile", "Dockerfile whose final stage gives the configuration")
	out := fs.String("out", "dist/image", "output directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s.Created = time.Unix(0, 0).UTC()
	if e := os.Getenv("SOURCE_DATE_EPOCH"); e != "" {
		sec, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", e, err)
		}
		s.Created = time.Unix(sec, 0).UTC()
	}
	res, err := build(s, *out)
	if err != nil {
		return err
	}
	fmt.Printf("image %s:%s (linux/%s) %s, layer %d bytes\n  %s\n  %s\n",
		s.Repository, s.Version, s.Arch, res.Manifest, res.LayerSize, res.Layout, res.Archive)
	return nil
}

// Package docs is delayq's documentation beyond the README: the
// architecture (ARCHITECTURE.md: the model, the flow, the guarantees and
// the tests that prove them), the focused pages it links (wire.md,
// storage.md, failures.md, libraries.md, performance.md and its history)
// and the guides README.md links to. It holds no code; its tests keep the
// documentation honest: README.md stays a guide of at most 450 lines,
// ARCHITECTURE.md at most 600 and performance.md at most 200; every
// relative link in README.md and docs/*.md names a file that exists, and
// every #anchor a heading of its target, by GitHub's rule (lower case,
// spaces to "-", punctuation other than "-" and "_" dropped, "-1", "-2" …
// for repeated headings); the package map and README's layout table name
// every package; and every test the proof table of ARCHITECTURE.md names
// exists, each row naming one that `make test` runs (TestProofTable reads
// the Makefile and the tests' sources: build tags, skips gated on a
// variable of another target). The shell examples are run as written by
// e2e/docexamples; each fenced sh block carries the <!-- example: … -->
// comment its package doc describes.
package docs

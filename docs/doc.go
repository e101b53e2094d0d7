// Package docs is delayq's documentation beyond the README: the
// architecture (ARCHITECTURE.md) and the guides README.md links to. It
// holds no code; its test keeps the documentation honest: README.md stays
// a guide of at most 450 lines, every relative link in README.md and
// docs/*.md names a file that exists, and every #anchor a heading of its
// target, by GitHub's rule (lower case, spaces to "-", punctuation other
// than "-" and "_" dropped, "-1", "-2" … for repeated headings). The
// shell examples are run as written by e2e/docexamples; each fenced sh
// block carries the <!-- example: … --> comment its package doc describes.
package docs

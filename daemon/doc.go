// Package daemon assembles delayd: it connects the backends (Kafka, Redis and
// the HBase payload store), creates delayq's topics and table when they are
// missing, builds the roles a Config asks for (ingest, dispatcher, scanner)
// and serves /metrics, /healthz and /readyz (and /debug/pprof/ with
// Config.Pprof, never its cmdline) through internal/httpserve, as it does
// the API.
//
// Secure defaults: an API address other than loopback needs the API token
// (or Config.APIInsecure), else Validate fails; an HTTP address other than
// loopback serves the console only with its token, else one WARN line
// says the console is off. /readyz and the console's dependency status
// say what kind of error a probe got, never its text (addresses); the
// "dependency down" log line keeps it.
//
// Goroutines: Run starts one per role plus the HTTP server, under one
// errgroup; when its context ends every role drains its in-flight work and
// commits, the HTTP server shuts down, and only then does Run return.
//
// Readiness: /healthz answers 200 while the process runs; /readyz answers 503
// until the topics and table exist and the backends answered, then 200. The
// "delayd ready" log line is written at that same moment.
//
// The pipeline code is the same whatever the backends are: the embedded mode
// hands Run an in-memory payload store and in-process Kafka and Redis
// addresses, nothing else changes.
//
// See docs/ARCHITECTURE.md for the whole pipeline and its interfaces.
package daemon

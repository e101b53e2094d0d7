// Package console is delayd's web console for operators: pages served from
// assets embedded in the binary (no build step), backed by a small JSON API
// under /ui/api/ on delayd's --http address.
//
// Pages (one HTML document, routed by the URL fragment):
//   - overview (/ui/#/): accepted, delivered, failed and cancelled rates and
//     totals, delivery lateness p50/p99, ingest lag and the status of every
//     dependency, from delayd's own Prometheus registry; the pending backlog
//     by due time as two charts, the next hour by minute and the next 30
//     days by day, from the Redis index.
//   - tasks (/ui/#/tasks?topic=…&key=…&from=…&to=…&state=…): stored tasks
//     found by package payload/find, a page at a time.
//   - task (/ui/#/task?id=…[&at=…]): the task's payload row (topic, key,
//     headers, payload, cancel marker) and whether it is still pending in
//     the index; cancel. Without at, the id row gives the due time.
//   - failed (/ui/#/failed): the newest messages of delay-failed with the
//     reason each carries (delay-error) and where it came from; replay of
//     the selected ones to delay-input.
//
// # Read-only unless asked, and the token
//
// Without Config.Write every action answers 403 and the pages show no
// buttons. With Write, Config.Token must be set (delayd reads it from
// DELAYQ_CONSOLE_TOKEN). With a Token every API call, reads included,
// must carry it as "Authorization: Bearer <token>" (401 otherwise): reads
// show task payloads and every delay-failed message. The pages ask for it
// at the first 401 and keep it in the tab's sessionStorage. A bearer
// header, unlike a cookie, is never sent by another site's form, so the
// console cannot be driven cross-site. delayd serves no console on an
// address other than loopback without a token (package daemon).
//
// Every request's Host must be an IP literal, localhost or one of
// Config.Hosts (421 otherwise), against DNS rebinding. Reads that return
// payloads are logged with who asked (remote address, forwarded-for, the
// token) and what (task id, delay-failed offsets). A backend that fails
// answers 502 naming it; its error, which names addresses, goes to the
// log only.
//
// # Goroutines
//
// None of its own: every figure is computed in the request that asks for
// it. Rates and lateness percentiles come from the difference between the
// registry now and a sample kept from a request at least Config.Window
// earlier (samples are kept for 2 × Window); the backlog is cached for
// Config.BacklogTTL because Index.Backlog costs one ZCARD per segment and
// shard. Dependency status is delayd's own probe state (Health), the same
// that /readyz and delayq_dependency_up report.
//
// # Backends
//
// The console declares the calls it needs (Index, Store, Canceller,
// FailedTopic, Health) and delayd hands it the ones its roles use, attached
// once they are ready (Attach); until then the API answers 503. Embedded
// mode works the same, so `make run` shows the console.
package console

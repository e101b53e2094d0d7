// Package api is delayd's HTTP API role (`--roles api`, listening on
// `--api`, default 127.0.0.1:8080) for services that do not speak Kafka.
// It turns each request into the delay-input message the Go client would
// write (package delayq), checks it with delayd's own validation
// (payload.Decode, so a refused request carries the reason delay-failed
// would give), writes it with acks from all in-sync replicas and answers
// only once Kafka has it. The pipeline then treats it as any other input.
// Times and delays ("at", "after", "until", "every", "expire_after", the
// list filters) are read by payload's functions, the wire's rules: a task
// needs exactly one of "at" and "after" ("after": "0s" is due now), and a
// number in "at" below 10^11 is refused as unix seconds.
//
//	POST   /v1/tasks       submit: 201 {"id", "at", "at_ms", "input"}
//	GET    /v1/tasks/{id}  state: 200 {"id", "state", "at", "at_ms"}; 404 unknown
//	PATCH  /v1/tasks/{id}  reschedule to {"at"} or {"after"}: 202
//	DELETE /v1/tasks/{id}  cancel by id: 202
//	GET    /v1/tasks       find stored tasks (payload/find): 200 {"tasks", "next", "examined"}
//	POST   /v1/tasks:batch submit up to MaxBatch tasks in one produce: 201 {"tasks", "count"};
//	                       400 {"error", "refused": [{"index", "error"}]} writes none
//	GET    /v1/openapi.yaml  the OpenAPI 3 document (openapi.yaml)
//
// Errors are JSON {"error": reason}; a dependency that fails is named,
// never its addresses (the log keeps the error). Bodies must be
// application/json (415 otherwise) and are limited to MaxBody bytes (413
// beyond). One client IP may make Config.Rate requests a second (429 with
// Retry-After beyond). With LocalHosts (delayd: on loopback, no token)
// only Host headers that are IP literals, localhost or Addr's host are
// answered (421 otherwise), against DNS rebinding. The server's timeouts
// and connection cap are package httpserve's. With a Token (DELAYQ_API_TOKEN) every /v1/tasks request
// needs `Authorization: Bearer <token>` (401 otherwise). A Kafka that does
// not take the message within WriteTimeout answers 503 with Retry-After:
// the caller retries; a task written twice with the same id and due time
// is one task.
//
// Metrics: delayq_api_requests_total{op,code}, delayq_api_request_seconds{op}.
package api

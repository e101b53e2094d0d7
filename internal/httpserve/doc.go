// Package httpserve builds delayd's HTTP servers (--http: metrics, health,
// console; --api: the HTTP API) with the same limits, so that a slow or
// greedy client cannot hold them:
//
//   - ReadHeaderTimeout and ReadTimeout bound the reading of a request,
//     body included: a body sent a few bytes at a time is cut when
//     ReadTimeout ends.
//   - WriteTimeout bounds the handling and the writing of the answer.
//   - IdleTimeout closes a keep-alive connection with no next request.
//   - MaxConns caps the connections served at once; more wait, unaccepted,
//     in the kernel's accept queue until one closes.
//
// It also says which addresses are loopback (Loopback), the test delayd
// applies before it serves the console or the API open, and which Host
// headers a server answers (HostAllowed), against DNS rebinding: a page of
// another site whose name was made to resolve to delayd's address sends
// that site's name as Host.
//
// # Goroutines
//
// Server.Run serves on the caller's goroutine plus the one net/http's Serve
// runs on; both have ended when Run returns.
package httpserve

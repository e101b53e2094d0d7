// Package drain gives a stopping component the time to finish what it holds:
// Context returns a context that outlives its parent's cancellation by a
// bounded grace period, so in-flight work is stored, produced and committed
// on a graceful stop instead of being cut off mid-call.
package drain

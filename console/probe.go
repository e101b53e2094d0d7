package console

// Status is the last probe result of one dependency.
type Status struct {
	Name      string  `json:"name"`
	Up        bool    `json:"up"`
	Error     string  `json:"error,omitempty"`
	LatencyMs float64 `json:"latency_ms"`
	CheckedAt int64   `json:"checked_at"` // unix ms
}

// Health reports the dependencies' last probe results. delayd's own
// prober (package daemon) satisfies it: the console shows what /readyz and
// delayq_dependency_up say, and probes nothing itself.
type Health interface {
	Dependencies() []Status
}

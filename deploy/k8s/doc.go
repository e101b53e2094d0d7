// Package k8s holds delayq's Kubernetes manifests, not Go code: a kustomize
// base (delayd Deployment, Service, PodDisruptionBudget, ConfigMap and
// Secret read through DELAYQ_* variables, a Job running `delayctl init`),
// an example overlay (a namespace, a pinned image, the Secret's values from
// secrets.env merged over the base's) and a component adding a
// ServiceMonitor for the Prometheus operator (components/servicemonitor).
// The image is the repository's Dockerfile (`make image`).
//
// k8s_test.go parses them and checks them against the binaries: every
// DELAYQ_* variable is a flag of delayd (or of delayctl for the Job), the
// container port is the one DELAYQ_HTTP listens on, the probes ask /readyz
// and /healthz on it, and the grace period outlasts the SIGTERM drain.
// kustomize_test.go renders the tracked files, as a clean checkout has
// them, with kustomize (deploy/local/tools installs it): the overlay keeps
// every Secret key of the base, and the ServiceMonitor selects delayd's
// Service; it also applies deploy/prometheus/kubernetes.yml's relabeling to
// the pods' prometheus.io/* annotations.
package k8s

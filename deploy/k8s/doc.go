// Package k8s holds delayq's Kubernetes manifests, not Go code: a kustomize
// base (delayd Deployment, Service, PodDisruptionBudget, ConfigMap and
// Secret read through DELAYQ_* variables, a Job running `delayctl init`)
// and an example overlay.
//
// k8s_test.go parses them and checks them against the binaries: every
// DELAYQ_* variable is a flag of delayd (or of delayctl for the Job), the
// container port is the one DELAYQ_HTTP listens on, the probes ask /readyz
// and /healthz on it, and the grace period outlasts the SIGTERM drain.
package k8s

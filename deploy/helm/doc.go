// Package helm holds delayq's Helm chart (delayq/), not Go code: the same
// content as the kustomize base in deploy/k8s (delayd's Deployment, or
// one per role; the ConfigMap of DELAYQ_* variables; the Secret, or an
// existing one; the Service, PodDisruptionBudgets, the `delayctl init`
// Job and the NetworkPolicy) plus, when asked, the Prometheus rules of
// deploy/prometheus as a PrometheusRule and a PodMonitor. values.yaml
// documents every value; delayq/examples/production.yaml is a production
// example.
//
// Its test runs `helm lint` and `helm template` with the default values
// and the production example (helm is built from the Go module proxy by
// deploy/local/tools), and compares the default rendering with the
// kustomize base, object by object: what a pod runs, its probes, its
// security context, its grace period, the configuration, the Secret's
// keys, the network policy's rules, the disruption budget and the init
// Job. The chart's copy of the rules must equal deploy/prometheus's.
package helm

// Package tools holds delayq's operator-side programs that are not part of the
// service. Each tool is a main package in a folder of its own below this one:
//
//   - loadgen drives a running delayd from the outside — Kafka for tasks and
//     deliveries, delayd's /metrics for acceptance and CPU, Redis for memory
//     — and reports rates, lateness, loss, duplicates and Redis bytes per
//     pending task, optionally against a kafka-go pass-through baseline
//     measured in the same run (docs/performance.md).
//   - image writes the Dockerfile's image (static delayd and delayctl, user
//     65532, no shell) as an OCI layout and a docker-archive without a
//     container engine (`make image`).
package tools

// Package grafana holds delayq's Grafana dashboard, not Go code:
// dashboards/delayq.json and the provisioning files docker-compose.yml
// mounts (provisioning/datasources: the compose file's Prometheus;
// provisioning/dashboards: loads dashboards/).
//
// dashboard_test.go runs an embedded delayd, sends it a little traffic and
// checks that every metric a dashboard panel or a Prometheus rule
// (deploy/prometheus/rules) queries is in delayd's /metrics, so a renamed
// metric breaks the build, not the dashboard.
package grafana

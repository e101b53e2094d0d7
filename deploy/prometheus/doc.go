// Package prometheus holds delayq's Prometheus files, not Go code:
// prometheus.yml (the scrape config docker-compose.yml runs), kubernetes.yml
// (pods found by their prometheus.io/* annotations, for a Prometheus
// without the operator; deploy/k8s has a ServiceMonitor for one with it;
// Debian's promtool is built without Kubernetes discovery, so deploy/k8s's
// test applies its relabeling to the Deployment's annotations instead) and
// rules/delayq.rules.yml (the alerts) with their unit tests,
// rules/delayq.rules.test.yml. rules_test.go runs `promtool check config`,
// `promtool check rules` and `promtool test rules` on them (Debian's
// prometheus package, installed by deploy/local/tools); deploy/grafana's
// test checks that every metric the rules query is one delayd exports.
package prometheus

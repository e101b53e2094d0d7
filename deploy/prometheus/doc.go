// Package prometheus holds delayq's Prometheus files, not Go code:
// prometheus.yml (the scrape config docker-compose.yml runs) and
// rules/delayq.rules.yml (the alerts) with their unit tests,
// rules/delayq.rules.test.yml. rules_test.go runs `promtool check config`,
// `promtool check rules` and `promtool test rules` on them (Debian's
// prometheus package, installed by deploy/local/tools); deploy/grafana's
// test checks that every metric the rules query is one delayd exports.
package prometheus

// Package monitoring holds no code: it ships Prometheus alerting rules
// (alerts.yaml, unit-tested by alerts_test.yaml) and a Grafana dashboard
// (grafana-dashboard.json) for myriarchd. Its tests check them with
// promtool and against the /metrics of a running myriarchd.
package monitoring

// Package alerts checks what the operator ships for monitoring: the PrometheusRule of config/prometheus
// (promtool's `check rules` and its unit tests in testdata, a firing and a quiet case for every alert), each
// alert's runbook under docs/runbooks, the Grafana dashboards of config/grafana, and that every metric an
// alert or a panel names is documented in docs/metrics.md. promtool and the PromQL parser come from the
// pinned tools module hack/tools/promtool (`make promtool`), so the operator's module does not depend on
// Prometheus. test/e2e uses the exported helpers to check that the operator really exports those metrics.
package alerts

// Package metrics owns the operator's own Prometheus metrics (platform_operator_*, docs/metrics.md): the
// per-API gauges computed from the manager's cache at scrape time, the reconcile wrapper that counts
// errors and times readiness, and Register, which registers them with the counters and histograms the
// catalyst, homelab, soju and ergo code records at the single point where each thing happens (package
// instruments, a leaf that clients import instead of this package). Import it as opmetrics:
// controller-runtime's package of the same name serves the registry everything here is registered in.
package metrics

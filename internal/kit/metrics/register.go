package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
)

// Namespace prefixes every metric of the operator's own.
const Namespace = instruments.Namespace

// The two instruments Instrument records, per API kind.
var (
	reconcileErrors = instruments.Counter("reconcile_errors_total", []string{"kind", "reason"},
		"Reconciles that returned an error, by API kind and the error's Kubernetes status reason (Other when it has none).")
	readyDuration = instruments.Histogram("ready_duration_seconds", instruments.DurationBuckets, []string{"kind"},
		"Time from an object's creation or generation change to its Ready condition becoming True for that generation.")
)

// initLabels gives the per-kind counter and histogram their known label values at zero, as
// instruments.Collectors does for its own: rate() of a counter that appears at 1 misses that first
// increment.
func initLabels(kinds []*Kind) {
	for _, k := range kinds {
		readyDuration.WithLabelValues(k.Name)
		for _, reason := range errorReasons {
			reconcileErrors.WithLabelValues(k.Name, reason)
		}
	}
}

// Register registers every metric of the operator's own with reg: the counters and histograms (the
// per-kind ones here and those of package instruments, with their known label values at zero) and one
// Collector computing the gauges of kinds from reader at scrape time, once elected is closed (see
// Collector). kinds must be those whose controllers run: the collector lists each of them from reader,
// which for a cache starts an informer for a kind no controller watches.
func Register(reg prometheus.Registerer, reader Reader, elected <-chan struct{}, kinds ...*Kind) error {
	initLabels(kinds)
	for _, c := range append([]prometheus.Collector{reconcileErrors, readyDuration}, instruments.Collectors()...) {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return reg.Register(NewCollector(reader, elected, kinds...))
}

package iot

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
)

// The fleet's metrics (docs/metrics.md, "Fleet"), declared with the kit's instruments (the operator's
// Namespace, the same constructors as every other group's counters and histograms) and registered by
// RegisterMetrics, which main.go calls beside opmetrics.Register. Label values are bounded: a
// Deployment's namespace and name, or fixed sets.
var (
	rejectedRecords = instruments.Counter("fleet_rejected_records_total", []string{"bucket", "reason"},
		"Device records the operator refused (they moved no count), by bucket and reason.")
	recounts = instruments.Counter("fleet_recounts_total", []string{"cause"},
		"Counts of the fleet's buckets from scratch (the phase counters and the device index), by cause.")
	rollbacks = instruments.Counter("fleet_rollbacks_total", []string{"reason"},
		"Rollbacks begun of a failed generation to the previous successful one (rollout.onFailure Rollback), by why the generation failed.")
	aggregationLag = instruments.Histogram("fleet_aggregation_lag_seconds", []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300}, nil,
		"Time from a device's state record (its at, by the device's clock) to the status that first shows it; the oldest record of each status write.")
	natsConnected = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: instruments.Namespace, Name: "fleet_nats_connected",
		Help: "1 while the operator is connected to the fleet's NATS server.",
	}, func() float64 {
		if st := fleetConn.Load(); st != nil && st.Conn() != nil && st.Conn().IsConnected() {
			return 1
		}
		return 0
	})
	fleetGauges = &deploymentCollector{
		devices: prometheus.NewDesc(instruments.Namespace+"_fleet_devices",
			"Selected devices of each iot Deployment by state for its current generation (running, failed, pending), from its status.",
			[]string{"namespace", "deployment", "state"}, nil),
		matched: prometheus.NewDesc(instruments.Namespace+"_fleet_matched_devices",
			"Registered devices each iot Deployment's selector selects, from its status.", []string{"namespace", "deployment"}, nil),
		stale: prometheus.NewDesc(instruments.Namespace+"_fleet_stale_devices",
			"Selected devices of each iot Deployment whose heartbeat lapsed, from its status.", []string{"namespace", "deployment"}, nil),
	}

	// fleetConn is the store whose connection natsConnected reports.
	fleetConn atomic.Pointer[store.Store]
)

// RegisterMetrics registers the fleet's metrics with reg (the operator: controller-runtime's registry,
// as opmetrics.Register does the kit's), the counters with every label combination at zero, so that
// alerts and dashboards find the series from the start, as instruments.Collectors does for its own.
func RegisterMetrics(reg prometheus.Registerer) error {
	for _, b := range []string{fleet.RecordsDevices, fleet.RecordsState, fleet.RecordsHeartbeats} {
		for _, r := range fleet.RejectReasons {
			rejectedRecords.WithLabelValues(b, r)
		}
	}
	for _, c := range store.RecountCauses {
		recounts.WithLabelValues(c)
	}
	for _, r := range []fleet.Hold{fleet.HoldFailures, fleet.HoldDeadline} {
		rollbacks.WithLabelValues(string(r))
	}
	aggregationLag.WithLabelValues()
	for _, c := range []prometheus.Collector{rejectedRecords, recounts, rollbacks, aggregationLag, natsConnected, fleetGauges} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// deploymentCollector computes the per-Deployment gauges at scrape time from the Deployments' status in
// the manager's cache: a deleted Deployment's series go with it, and no replica keeps state for them.
type deploymentCollector struct {
	devices, matched, stale *prometheus.Desc
	reader                  atomic.Pointer[readerBox]
}

// readerBox holds the reader the collector lists with.
type readerBox struct{ client.Reader }

// Describe sends the gauges' descriptions.
func (c *deploymentCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.devices
	ch <- c.matched
	ch <- c.stale
}

// Collect lists the iot Deployments from the cache (none before the manager set it).
func (c *deploymentCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.reader.Load()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list iotv1.DeploymentList
	if err := r.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		d := &list.Items[i]
		a := d.Status.Aggregate
		for state, n := range map[string]int32{"running": a.Succeeded, "failed": a.Failed, "pending": a.Pending} {
			ch <- prometheus.MustNewConstMetric(c.devices, prometheus.GaugeValue, float64(n), d.Namespace, d.Name, state)
		}
		ch <- prometheus.MustNewConstMetric(c.matched, prometheus.GaugeValue, float64(a.MatchedDevices), d.Namespace, d.Name)
		ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, float64(a.Stale), d.Namespace, d.Name)
	}
}

// observeLag records the aggregation lag of a status that shows records as old as oldest (zero: none).
// Device clocks are the devices': a record from the future, or more than an hour old, says more about
// the clock than about the operator and is not observed.
func observeLag(now, oldest time.Time) {
	if oldest.IsZero() {
		return
	}
	if lag := now.Sub(oldest); lag >= 0 && lag <= time.Hour {
		aggregationLag.WithLabelValues().Observe(lag.Seconds())
	}
}

// reportLimiter bounds the Events and log lines the fleet's bad input causes: at most one per device per
// reportWindow, at most reportBurst per second in all, and it remembers at most reportDevices devices.
type reportLimiter struct {
	mu     sync.Mutex
	last   map[string]time.Time
	second time.Time
	inSec  int
}

const (
	reportWindow  = time.Minute
	reportBurst   = 10
	reportDevices = 4096
)

// allow says whether a report about device (its key) may be sent at now.
func (l *reportLimiter) allow(device string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.second) >= time.Second {
		l.second, l.inSec = now, 0
	}
	if l.inSec >= reportBurst {
		return false
	}
	if at, ok := l.last[device]; ok && now.Sub(at) < reportWindow {
		return false
	}
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	if len(l.last) >= reportDevices {
		for k, at := range l.last {
			if now.Sub(at) >= reportWindow {
				delete(l.last, k)
			}
		}
		if len(l.last) >= reportDevices {
			return false
		}
	}
	l.last[device] = now
	l.inSec++
	return true
}

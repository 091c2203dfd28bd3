package iot

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// fleetRegistry holds the fleet's metrics as RegisterMetrics registers them.
var fleetRegistry = func() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	if err := RegisterMetrics(reg); err != nil {
		panic(err)
	}
	return reg
}()

// gather is every fleet metric family on fleetRegistry, by name.
func gather(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := fleetRegistry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "platform_operator_fleet_") {
			out[mf.GetName()] = mf
		}
	}
	return out
}

func labelsOf(m *dto.Metric) string {
	var l []string
	for _, p := range m.GetLabel() {
		l = append(l, p.GetName()+"="+p.GetValue())
	}
	sort.Strings(l)
	return strings.Join(l, ",")
}

// TestFleetMetricsFromTheStart: the counters show every label combination of the catalog at zero, the
// histogram and the connection gauge are there before anything happened; the per-Deployment gauges come
// from the Deployments' status once the collector has a reader, and only then.
func TestFleetMetricsFromTheStart(t *testing.T) {
	fleetGauges.reader.Store(nil)
	got := gather(t)
	for name, series := range map[string]int{
		"platform_operator_fleet_rejected_records_total":  3 * 6,
		"platform_operator_fleet_recounts_total":          5,
		"platform_operator_fleet_aggregation_lag_seconds": 1,
		"platform_operator_fleet_nats_connected":          1,
	} {
		if mf := got[name]; mf == nil || len(mf.GetMetric()) != series {
			t.Errorf("%s: %v, want %d series", name, mf, series)
		}
	}
	if mf := got["platform_operator_fleet_nats_connected"]; mf != nil && mf.GetMetric()[0].GetGauge().GetValue() != 0 {
		t.Error("connected to NATS without a connection")
	}
	if got["platform_operator_fleet_devices"] != nil {
		t.Error("per-Deployment gauges without a reader")
	}

	d := &iotv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Status: iotv1.DeploymentStatus{Aggregate: iotv1.Aggregate{MatchedDevices: 5, Succeeded: 3, Failed: 1, Pending: 1, Stale: 2}}}
	fleetGauges.reader.Store(&readerBox{fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(d).Build()})
	defer fleetGauges.reader.Store(nil)
	got = gather(t)
	want := map[string]map[string]float64{
		"platform_operator_fleet_devices": {
			"deployment=web,namespace=shop,state=running": 3, "deployment=web,namespace=shop,state=failed": 1,
			"deployment=web,namespace=shop,state=pending": 1,
		},
		"platform_operator_fleet_matched_devices": {"deployment=web,namespace=shop": 5},
		"platform_operator_fleet_stale_devices":   {"deployment=web,namespace=shop": 2},
	}
	for name, series := range want {
		mf := got[name]
		if mf == nil {
			t.Errorf("%s missing", name)
			continue
		}
		seen := map[string]float64{}
		for _, m := range mf.GetMetric() {
			seen[labelsOf(m)] = m.GetGauge().GetValue()
		}
		for l, v := range series {
			if seen[l] != v {
				t.Errorf("%s{%s} = %v, want %v (all: %v)", name, l, seen[l], v, seen)
			}
		}
	}
}

func TestObserveLag(t *testing.T) {
	count := func() uint64 {
		return gather(t)["platform_operator_fleet_aggregation_lag_seconds"].GetMetric()[0].GetHistogram().GetSampleCount()
	}
	now := time.Unix(10_000, 0)
	before := count()
	observeLag(now, time.Time{})
	observeLag(now, now.Add(time.Minute))  // a device clock ahead
	observeLag(now, now.Add(-2*time.Hour)) // or far behind
	if got := count(); got != before {
		t.Errorf("%d observations of lags the device's clock made up", got-before)
	}
	observeLag(now, now.Add(-300*time.Millisecond))
	if got := count(); got != before+1 {
		t.Errorf("a 300 ms lag was not observed")
	}
}

func TestReportLimiter(t *testing.T) {
	var l reportLimiter
	now := time.Unix(0, 0)
	if !l.allow("a", now) {
		t.Fatal("the first report of a device was held back")
	}
	if l.allow("a", now.Add(time.Second)) {
		t.Error("a second report of the same device within the window went out")
	}
	if !l.allow("a", now.Add(reportWindow)) {
		t.Error("a report after the window was held back")
	}
	// The burst: at most reportBurst reports in a second, whatever the devices.
	l = reportLimiter{}
	sent := 0
	for i := range 3 * reportBurst {
		if l.allow(string(rune('a'+i)), now) {
			sent++
		}
	}
	if sent != reportBurst {
		t.Errorf("%d reports in one second, want %d", sent, reportBurst)
	}
	// The memory: at most reportDevices devices remembered.
	l = reportLimiter{}
	for i := range 2 * reportDevices {
		l.allow(time.Duration(i).String(), now.Add(time.Duration(i)*time.Second))
	}
	if len(l.last) > reportDevices {
		t.Errorf("%d devices remembered, at most %d", len(l.last), reportDevices)
	}
}

// docFleetMetric matches a row of docs/metrics.md's tables: | `platform_operator_...` | type | labels |.
var docFleetMetric = regexp.MustCompile("^\\|\\s*`(platform_operator_fleet_[a-z0-9_]+)`\\s*\\|\\s*([a-z]+)\\s*\\|([^|]*)\\|")

// TestFleetMetricsDocumented: docs/metrics.md's Fleet section lists exactly the fleet metrics the
// controller registers (with a Deployment to show the per-Deployment gauges), with their types and labels.
func TestFleetMetricsDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	type doc struct{ typ, labels string }
	documented := map[string]doc{}
	inFleet := false
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			inFleet = h == "Fleet"
			continue
		}
		if m := docFleetMetric.FindStringSubmatch(line); m != nil {
			if !inFleet {
				t.Errorf("%s is documented outside the Fleet section", m[1])
			}
			var names []string
			labels := regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(m[3], "") // the values in parentheses
			for _, l := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(labels, -1) {
				names = append(names, l[1])
			}
			sort.Strings(names)
			documented[m[1]] = doc{m[2], strings.Join(names, ",")}
		}
	}
	d := &iotv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	fleetGauges.reader.Store(&readerBox{fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(d).Build()})
	defer fleetGauges.reader.Store(nil)
	registered := gather(t)
	for name, mf := range registered {
		want, ok := documented[name]
		if !ok {
			t.Errorf("%s is registered and not in docs/metrics.md's Fleet section", name)
			continue
		}
		if typ := strings.ToLower(mf.GetType().String()); typ != want.typ {
			t.Errorf("docs/metrics.md says %s is a %s; it is a %s", name, want.typ, typ)
		}
		var names []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			names = append(names, l.GetName())
		}
		sort.Strings(names)
		if got := strings.Join(names, ","); got != want.labels {
			t.Errorf("docs/metrics.md says %s has labels %q; it has %q", name, want.labels, got)
		}
	}
	for name := range documented {
		if registered[name] == nil {
			t.Errorf("docs/metrics.md lists %s, which the controller does not register", name)
		}
	}
	if len(documented) != 8 {
		t.Errorf("%d fleet metrics documented, the catalog has 8", len(documented))
	}
}

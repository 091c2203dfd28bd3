package testutil

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// MetricValue gathers reg and adds up the values of family name's series whose labels include want (a
// gauge's or a counter's value, a histogram's sample count); found is how many series matched, so that a
// caller tells a series at zero from a series that is not there.
func MetricValue(reg prometheus.Gatherer, name string, want map[string]string) (value float64, found int, err error) {
	families, err := reg.Gather()
	if err != nil {
		return 0, 0, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				found++
				value += m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return value, found, nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

package localcluster

import (
	"io"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of a Prometheus /metrics endpoint (the operator's, kube-apiserver's, etcd's),
// by metric family name.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics reads the Prometheus text format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return Metrics(families), nil
}

// Sum adds the samples of the series called name whose labels include every one of labels (nil matches
// every series). name is a series name as the text format writes it: a counter, gauge or untyped
// metric's, or a histogram's or summary's <family>_count or <family>_sum. A metric the process has not
// registered or reported yet sums to 0.
func (m Metrics) Sum(name string, labels map[string]string) float64 {
	total := 0.0
	m.each(name, labels, func(_ *dto.Metric, v float64) { total += v })
	return total
}

// SumBy is Sum per value of label: what each value's series add up to. Series without the label are left
// out.
func (m Metrics) SumBy(name, label string, labels map[string]string) map[string]float64 {
	out := map[string]float64{}
	m.each(name, labels, func(s *dto.Metric, v float64) {
		for _, lp := range s.GetLabel() {
			if lp.GetName() == label {
				out[lp.GetValue()] += v
				return
			}
		}
	})
	return out
}

// each calls f with every sample of series name whose labels match.
func (m Metrics) each(name string, labels map[string]string, f func(*dto.Metric, float64)) {
	if fam, ok := m[name]; ok {
		for _, s := range fam.GetMetric() {
			if !hasLabels(s, labels) {
				continue
			}
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				f(s, s.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				f(s, s.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				f(s, s.GetUntyped().GetValue())
			default:
				// A histogram or summary has no series of its own name.
			}
		}
	}
	for _, suffix := range []string{"_count", "_sum"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		fam := m[base]
		if fam == nil {
			continue
		}
		for _, s := range fam.GetMetric() {
			if !hasLabels(s, labels) {
				continue
			}
			switch {
			case fam.GetType() == dto.MetricType_HISTOGRAM && suffix == "_count":
				f(s, float64(s.GetHistogram().GetSampleCount()))
			case fam.GetType() == dto.MetricType_HISTOGRAM:
				f(s, s.GetHistogram().GetSampleSum())
			case fam.GetType() == dto.MetricType_SUMMARY && suffix == "_count":
				f(s, float64(s.GetSummary().GetSampleCount()))
			case fam.GetType() == dto.MetricType_SUMMARY:
				f(s, s.GetSummary().GetSampleSum())
			}
		}
	}
}

// hasLabels tells whether s carries every one of want; as in Prometheus, a label s lacks has the value "".
func hasLabels(s *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		got := ""
		for _, lp := range s.GetLabel() {
			if lp.GetName() == k {
				got = lp.GetValue()
				break
			}
		}
		if got != v {
			return false
		}
	}
	return true
}

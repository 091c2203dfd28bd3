package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricValue(t *testing.T) {
	reg := prometheus.NewRegistry()
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total"}, []string{"kind", "result"})
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g"}, []string{"kind"})
	histogram := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds"}, []string{"result"})
	reg.MustRegister(counter, gauge, histogram)
	counter.WithLabelValues("a", "ok").Add(2)
	counter.WithLabelValues("b", "ok").Add(3)
	counter.WithLabelValues("a", "failed").Add(0)
	gauge.WithLabelValues("a").Set(4)
	histogram.WithLabelValues("ok").Observe(1)
	histogram.WithLabelValues("ok").Observe(2)
	tests := []struct {
		name   string
		family string
		want   map[string]string
		value  float64
		found  int
	}{
		{name: "one counter series", family: "c_total", want: map[string]string{"kind": "a", "result": "ok"}, value: 2, found: 1},
		{name: "the series a label names add up", family: "c_total", want: map[string]string{"result": "ok"}, value: 5, found: 2},
		{name: "a series at zero is found", family: "c_total", want: map[string]string{"result": "failed"}, value: 0, found: 1},
		{name: "no such series", family: "c_total", want: map[string]string{"result": "other"}, value: 0, found: 0},
		{name: "no such family", family: "x_total", want: nil, value: 0, found: 0},
		{name: "a gauge", family: "g", want: map[string]string{"kind": "a"}, value: 4, found: 1},
		{name: "a histogram's sample count", family: "h_seconds", want: map[string]string{"result": "ok"}, value: 2, found: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value, found, err := MetricValue(reg, tt.family, tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if value != tt.value || found != tt.found {
				t.Errorf("MetricValue = %v, %d; want %v, %d", value, found, tt.value, tt.found)
			}
		})
	}
}

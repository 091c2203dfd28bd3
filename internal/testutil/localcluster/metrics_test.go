package localcluster

import (
	"maps"
	"strings"
	"testing"
)

// scrape is /metrics as a controller-runtime operator serves it, trimmed: counters with labels, a gauge,
// a histogram, a summary and an untyped series without TYPE line.
const scrape = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="ergonetwork",result="error"} 2
controller_runtime_reconcile_total{controller="ergonetwork",result="success"} 40
controller_runtime_reconcile_total{controller="other",result="success"} 7
# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 10
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 3
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 5
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 1
# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="platform-operator.josie.cloud"} 1
# HELP controller_runtime_reconcile_time_seconds Length of time per reconciliation per controller
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="ergonetwork",le="0.005"} 30
controller_runtime_reconcile_time_seconds_bucket{controller="ergonetwork",le="+Inf"} 42
controller_runtime_reconcile_time_seconds_sum{controller="ergonetwork"} 0.84
controller_runtime_reconcile_time_seconds_count{controller="ergonetwork"} 42
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} 0.0001
go_gc_duration_seconds_sum 0.25
go_gc_duration_seconds_count 12
process_cpu_seconds_total 1.5 1700000000000
workqueue_depth{name="ergonetwork"} 0
`

func TestMetricsSum(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		series string
		labels map[string]string
		want   float64
	}{
		{"every series of a counter", "controller_runtime_reconcile_total", nil, 49},
		{"one label", "controller_runtime_reconcile_total", map[string]string{"controller": "ergonetwork"}, 42},
		{"two labels", "controller_runtime_reconcile_total", map[string]string{"controller": "ergonetwork", "result": "error"}, 2},
		{"a label value no series has", "controller_runtime_reconcile_total", map[string]string{"controller": "nope"}, 0},
		{"a label no series has", "controller_runtime_reconcile_total", map[string]string{"shard": "1"}, 0},
		{"a label no series has, asked empty", "controller_runtime_reconcile_total", map[string]string{"shard": ""}, 49},
		{"a gauge", "leader_election_master_status", map[string]string{"name": "platform-operator.josie.cloud"}, 1},
		{"a histogram's count", "controller_runtime_reconcile_time_seconds_count", map[string]string{"controller": "ergonetwork"}, 42},
		{"a histogram's sum", "controller_runtime_reconcile_time_seconds_sum", map[string]string{"controller": "ergonetwork"}, 0.84},
		{"a histogram has no series of its own name", "controller_runtime_reconcile_time_seconds", nil, 0},
		{"a summary's count", "go_gc_duration_seconds_count", nil, 12},
		{"a summary's sum", "go_gc_duration_seconds_sum", nil, 0.25},
		{"untyped, with a timestamp", "process_cpu_seconds_total", nil, 1.5},
		{"zero is a value", "workqueue_depth", map[string]string{"name": "ergonetwork"}, 0},
		{"a metric not reported", "no_such_metric_total", nil, 0},
		{"a prefix of a name is not the name", "controller_runtime_reconcile", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.Sum(tt.series, tt.labels); got != tt.want {
				t.Errorf("Sum(%q, %v) = %v, want %v", tt.series, tt.labels, got, tt.want)
			}
		})
	}
}

func TestMetricsSumBy(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		series, label string
		labels        map[string]string
		want          map[string]float64
	}{
		{"by method", "rest_client_requests_total", "method", nil, map[string]float64{"GET": 10, "POST": 3, "PATCH": 6}},
		{"by method, one code", "rest_client_requests_total", "method", map[string]string{"code": "200"}, map[string]float64{"GET": 10, "PATCH": 5}},
		{"a label no series has", "rest_client_requests_total", "verb", nil, map[string]float64{}},
		{"by controller, a histogram's count", "controller_runtime_reconcile_time_seconds_count", "controller", nil, map[string]float64{"ergonetwork": 42}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.SumBy(tt.series, tt.label, tt.labels); !maps.Equal(got, tt.want) {
				t.Errorf("SumBy(%q, %q, %v) = %v, want %v", tt.series, tt.label, tt.labels, got, tt.want)
			}
		})
	}
}

func TestParseMetricsErrors(t *testing.T) {
	tests := []struct {
		name, text string
	}{
		{"a value that is no number", "foo_total{a=\"b\"} many\n"},
		{"no value", "foo_total{a=\"b\"}\n"},
		{"an unterminated label value", "foo_total{a=\"b} 1\n"},
		{"a family split in two", "# TYPE a counter\na 1\n# TYPE b counter\nb 1\n# TYPE a counter\na{x=\"1\"} 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := ParseMetrics(strings.NewReader(tt.text)); err == nil {
				t.Errorf("ParseMetrics(%q) = %v, want an error", tt.text, m)
			}
		})
	}
}

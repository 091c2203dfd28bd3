package promtext

import "testing"

func TestParseAndSum(t *testing.T) {
	s, err := Parse(`# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",method="GET"} 12
rest_client_requests_total{code="201",method="POST"} 3 1700000000000
rest_client_requests_total_other{method="GET"} 100
process_cpu_seconds_total 4.5
weird{msg="a } b c"} 2

`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		metric string
		labels []string
		want   float64
	}{
		{"rest_client_requests_total", nil, 15},
		{"rest_client_requests_total", []string{`method="GET"`}, 12},
		{"rest_client_requests_total", []string{`method="GET"`, `code="201"`}, 0},
		{"process_cpu_seconds_total", nil, 4.5},
		{"weird", []string{`msg="a } b c"`}, 2},
		{"absent", nil, 0},
	}
	for _, tt := range tests {
		if got := s.Sum(tt.metric, tt.labels...); got != tt.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", tt.metric, tt.labels, got, tt.want)
		}
	}
	for _, bad := range []string{"m{a=\"b\"} notanumber\n", "lonely\n"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) should fail", bad)
		}
	}
}

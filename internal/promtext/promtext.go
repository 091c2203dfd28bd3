// Package promtext reads the Prometheus text format that /metrics endpoints serve (the operator's, the
// API server's, etcd's), for the e2e suite and the bench.
package promtext

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Samples maps each series, `name{labels}` as written, to its value.
type Samples map[string]float64

// Parse reads every sample of text; comments and blank lines are skipped, and a sample whose value is
// not a number is an error. A timestamp after the value is ignored.
func Parse(text string) (Samples, error) {
	out := Samples{}
	s := bufio.NewScanner(strings.NewReader(text))
	s.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// Label values may hold spaces, so the series ends at the last '}' when there are labels.
		end := strings.IndexByte(line, ' ')
		if i := strings.LastIndexByte(line, '}'); i >= 0 {
			end = i + 1
		}
		if end <= 0 || end >= len(line) {
			return nil, fmt.Errorf("metric line %q: no value", line)
		}
		fields := strings.Fields(line[end:])
		if len(fields) == 0 {
			return nil, fmt.Errorf("metric line %q: no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		out[line[:end]] = v
	}
	return out, s.Err()
}

// Sum adds the samples of metric whose labels contain every one of labels (`name="value"`). A metric
// the process has not registered or reported yet sums to 0.
func (s Samples) Sum(metric string, labels ...string) float64 {
	total := 0.0
	for series, v := range s {
		rest, ok := strings.CutPrefix(series, metric)
		if !ok || (rest != "" && rest[0] != '{') {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				match = false
				break
			}
		}
		if match {
			total += v
		}
	}
	return total
}
